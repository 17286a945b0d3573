/* Linked into every program of a HOSTKEEPER_SANITIZE build. GCC 12's
 * libubsan, loaded next to libasan, ignores log_path in UBSAN_OPTIONS and
 * always reports on stderr, which a daemon started on demand sends to
 * /dev/null. This hands that log_path to libubsan itself, so its reports land
 * in files as ASan's do (tests/run.sh asan fails when any file appears). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

__attribute__((constructor)) static void hostkeeper_ubsan_log_path(void) {
    const char* options = getenv("UBSAN_OPTIONS");
    const char* found = options ? strstr(options, "log_path=") : NULL;
    if (found == NULL) return;
    found += strlen("log_path=");
    char path[4096];
    const size_t length = strcspn(found, ":");
    if (length == 0 || length >= sizeof path) return;
    memcpy(path, found, length);
    path[length] = '\0';
    void* ubsan = dlopen("libubsan.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (ubsan == NULL) return;
    void (*set_report_path)(const char*) =
        (void (*)(const char*))dlsym(ubsan, "__sanitizer_set_report_path");
    if (set_report_path != NULL) set_report_path(path);
    dlclose(ubsan);
}
