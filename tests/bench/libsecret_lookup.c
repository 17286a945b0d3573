/* hk_bench_libsecret_lookup HOST
 *
 * The baseline for "what does a one-shot program that talks to the Secret
 * Service itself cost": libsecret's simple API, the same schema and attribute
 * hostkeeperd uses (io.hostkeeper.Credentials, host=HOST). Connects to the
 * session bus, looks the item up, prints its secret, exits. Exit status: 0
 * found, 1 not found, 2 error or usage.
 */
#include <libsecret/secret.h>
#include <stdio.h>

static const SecretSchema hk_schema = {
    .name = "io.hostkeeper.Credentials",
    .flags = SECRET_SCHEMA_NONE,
    .attributes =
        {
            {"host", SECRET_SCHEMA_ATTRIBUTE_STRING},
            {NULL, 0},
        },
};

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s HOST\n", argv[0]);
        return 2;
    }
    GError* error = NULL;
    gchar* secret = secret_password_lookup_sync(&hk_schema, NULL, &error, "host", argv[1], NULL);
    if (error != NULL) {
        fprintf(stderr, "%s: %s\n", argv[0], error->message);
        g_error_free(error);
        return 2;
    }
    if (secret == NULL) return 1;
    printf("%s\n", secret);
    secret_password_free(secret);
    return 0;
}
