#include "daemon/backends/migration.hpp"

#include <spdlog/spdlog.h>

#include <optional>

#include "daemon/credentials/credential_service.hpp"

namespace hostkeeper::daemon::backends {
using proto::Error;
using proto::ErrorCode;
using proto::Secret;

namespace {

// The credentials as hostkeeper serves them (compact JSON), or nullopt.
std::optional<Secret> read_normalized(credentials::Keyring& keyring, const std::string& host) {
    std::optional<Secret> text = keyring.lookup(host);
    if (!text) return std::nullopt;
    return credentials::credentials_from_keyring_text(host, *text);
}

// One host; throws proto::Error with what went wrong, having put back what it changed.
void move_host(credentials::Keyring& from, credentials::Keyring& to, const std::string& host) {
    const std::optional<Secret> source = read_normalized(from, host);
    if (!source) return;  // gone meanwhile: nothing to move
    const std::optional<Secret> existing = read_normalized(to, host);
    if (existing) {
        if (existing->view() != source->view()) {
            throw Error(ErrorCode::keyring_error,
                        "the " + std::string(to.name()) +
                            " backend already holds other credentials for " + host +
                            "; remove the one that is wrong (hostkeeper forget " + host +
                            " with that backend) and run migrate again");
        }
    } else {
        try {
            to.store(host, *source);
            const std::optional<Secret> back = read_normalized(to, host);
            if (!back || back->view() != source->view()) {
                throw Error(ErrorCode::keyring_error, "the credentials read back from " +
                                                          std::string(to.name()) +
                                                          " differ from what was written");
            }
        } catch (const Error&) {
            try {
                (void)to.remove(host);
            } catch (const std::exception& e) {
                spdlog::warn("migrate: could not take {} out of {} again: {}", host, to.name(),
                             e.what());
            }
            throw;
        }
    }
    try {
        (void)from.remove(host);
    } catch (const Error&) {
        if (!existing) {
            try {
                (void)to.remove(host);
            } catch (const std::exception& e) {
                spdlog::warn("migrate: could not take {} out of {} again: {}", host, to.name(),
                             e.what());
            }
        }
        throw;
    }
}

}  // namespace

MigrationResult migrate(credentials::Keyring& from, credentials::Keyring& to) {
    MigrationResult result;
    result.from = std::string(from.name());
    result.to = std::string(to.name());
    for (const std::string& host : from.hosts()) {
        try {
            move_host(from, to, host);
            result.migrated.push_back(host);
        } catch (const Error& e) {
            result.failed.push_back({host, e.code(), e.what()});
        } catch (const std::exception& e) {
            result.failed.push_back({host, ErrorCode::keyring_error, e.what()});
        }
    }
    spdlog::info("migrate from {} to {}: {} moved, {} failed", result.from, result.to,
                 result.migrated.size(), result.failed.size());
    return result;
}

}  // namespace hostkeeper::daemon::backends
