/* hk_bench_keyring_fill COLLECTION PREFIX START COUNT [TOKEN_LENGTH]
 *
 * Benchmark set-up, not a baseline: puts COUNT items of hostkeeperd's schema
 * (io.hostkeeper.Credentials, host=<PREFIX><i>.example.com for i in
 * [START, START+COUNT)) into the Secret Service collection COLLECTION
 * ("session": gnome-keyring's in-memory collection, which it never writes to
 * disk; "default": the default, on-disk one) with libsecret directly, over
 * one D-Bus connection. The secret is a credentials object as hostkeeperd
 * stores it, {"token":"..."} with a token of TOKEN_LENGTH (default 90)
 * bytes. Prints one JSON line: {"collection":..,"items":..,"seconds":..}.
 * Exit status: 0 all stored, 2 error or usage.
 */
#include <libsecret/secret.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const SecretSchema hk_schema = {
    .name = "io.hostkeeper.Credentials",
    .flags = SECRET_SCHEMA_NONE,
    .attributes =
        {
            {"host", SECRET_SCHEMA_ATTRIBUTE_STRING},
            {NULL, 0},
        },
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
    if (argc != 5 && argc != 6) {
        fprintf(stderr, "usage: %s session|default PREFIX START COUNT [TOKEN_LENGTH]\n", argv[0]);
        return 2;
    }
    const char* collection = strcmp(argv[1], "session") == 0   ? SECRET_COLLECTION_SESSION
                             : strcmp(argv[1], "default") == 0 ? SECRET_COLLECTION_DEFAULT
                                                               : NULL;
    if (collection == NULL) {
        fprintf(stderr, "%s: COLLECTION is session or default\n", argv[0]);
        return 2;
    }
    const char* prefix = argv[2];
    const unsigned long start = strtoul(argv[3], NULL, 10);
    const unsigned long count = strtoul(argv[4], NULL, 10);
    const unsigned long token_length = argc == 6 ? strtoul(argv[5], NULL, 10) : 90;
    if (token_length > 4096) {
        fprintf(stderr, "%s: TOKEN_LENGTH at most 4096\n", argv[0]);
        return 2;
    }

    const double t0 = now_s();
    for (unsigned long i = start; i < start + count; ++i) {
        char host[512];
        char label[600];
        char token[4200];
        char secret[4300];
        snprintf(host, sizeof host, "%s%lu.example.com", prefix, i);
        snprintf(label, sizeof label, "hostkeeper: %s", host);
        /* Shaped like a Terraform Cloud API token, as socket_load.cpp makes them. */
        int n = snprintf(token, sizeof token, "bench%lu.atlasv1.", i);
        while (n >= 0 && (unsigned long)n < token_length && (size_t)n + 1 < sizeof token)
            token[n++] = 'x';
        token[n] = '\0';
        snprintf(secret, sizeof secret, "{\"token\":\"%s\"}", token);
        GError* error = NULL;
        if (!secret_password_store_sync(&hk_schema, collection, label, secret, NULL, &error, "host",
                                        host, NULL)) {
            fprintf(stderr, "%s: storing %s: %s\n", argv[0], host,
                    error != NULL ? error->message : "failed");
            if (error != NULL) g_error_free(error);
            return 2;
        }
    }
    printf("{\"collection\":\"%s\",\"items\":%lu,\"seconds\":%.3f}\n", argv[1], count,
           now_s() - t0);
    return 0;
}
