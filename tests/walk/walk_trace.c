/* walk_trace.c: the function-entry recorder of a walk build
 * (-DHOSTKEEPER_WALK=ON, which compiles every product source with
 * -finstrument-functions and links this file into every program).
 *
 * Nothing is recorded until the process gets SIGUSR2; from then on each
 * entry into an instrumented function appends (thread, function address
 * relative to the executable's start) to a buffer; the next SIGUSR2 writes
 * the buffer to $HOSTKEEPER_WALK_TRACE (binary: two little-endian uint64
 * per entry) and stops recording. Without HOSTKEEPER_WALK_TRACE in the
 * environment the signal is left as it was. tests/walk/walk.py reads the file. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NO_TRACE __attribute__((no_instrument_function))

enum { capacity = 1 << 20 };

extern char __executable_start;

static uint64_t entries[capacity][2];
static volatile sig_atomic_t recording;
static volatile sig_atomic_t used;
static const char* trace_path;

void __cyg_profile_func_enter(void* function, void* call_site) NO_TRACE;
void __cyg_profile_func_exit(void* function, void* call_site) NO_TRACE;

void __cyg_profile_func_enter(void* function, void* call_site) {
    (void)call_site;
    if (!recording) return;
    static __thread uint64_t thread;
    if (thread == 0) thread = (uint64_t)syscall(SYS_gettid);
    sig_atomic_t at = __atomic_fetch_add(&used, 1, __ATOMIC_RELAXED);
    if (at >= capacity) return;
    entries[at][0] = thread;
    entries[at][1] = (uint64_t)((char*)function - &__executable_start);
}

void __cyg_profile_func_exit(void* function, void* call_site) {
    (void)function;
    (void)call_site;
}

static void NO_TRACE toggle(int signal_number) {
    (void)signal_number;
    if (!recording) {
        used = 0;
        recording = 1;
        return;
    }
    recording = 0;
    int fd = open(trace_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return;
    size_t n = used < capacity ? (size_t)used : capacity;
    const char* bytes = (const char*)entries;
    size_t left = n * sizeof entries[0];
    while (left > 0) {
        ssize_t written = write(fd, bytes, left);
        if (written <= 0) break;
        bytes += written;
        left -= (size_t)written;
    }
    close(fd);
}

static void NO_TRACE install(void) __attribute__((constructor));
static void install(void) {
    trace_path = getenv("HOSTKEEPER_WALK_TRACE");
    if (trace_path == NULL || trace_path[0] == '\0') return;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = toggle;
    action.sa_flags = SA_RESTART;
    sigaction(SIGUSR2, &action, NULL);
}
