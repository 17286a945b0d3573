#pragma once
// Settings of every HTTPS request the daemon makes: discovery, registries,
// mirrors and provider downloads (config.toml's discovery.ca_file, --ca-file).

#include <string>

namespace hostkeeper::daemon::http {

struct HttpOptions {
    std::string ca_file;  // "": SSL_CERT_FILE / SSL_CERT_DIR, else the system's
};

}  // namespace hostkeeper::daemon::http
