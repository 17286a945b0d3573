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

void take_back(credentials::Keyring& to, const std::string& host) {
    try {
        (void)to.remove(host);
    } catch (const std::exception& e) {
        spdlog::warn("migrate: could not take {} out of {} again: {}", host, to.name(), e.what());
    }
}

enum class Copied { written, already_there, gone };

// Copies one host; throws proto::Error, having removed what it wrote.
Copied copy_host(credentials::Keyring& from, credentials::Keyring& to, const std::string& host) {
    const std::optional<Secret> source = read_normalized(from, host);
    if (!source) return Copied::gone;
    if (const std::optional<Secret> existing = read_normalized(to, host)) {
        if (existing->view() == source->view()) return Copied::already_there;
        throw Error(ErrorCode::keyring_error,
                    "the " + std::string(to.name()) +
                        " backend already holds other credentials for " + host +
                        "; remove the one that is wrong and run migrate again");
    }
    try {
        to.store(host, *source);
        const std::optional<Secret> back = read_normalized(to, host);
        if (!back || back->view() != source->view()) {
            throw Error(ErrorCode::keyring_error, "the credentials read back from " +
                                                      std::string(to.name()) +
                                                      " differ from what was written");
        }
    } catch (const Error&) {
        take_back(to, host);
        throw;
    }
    return Copied::written;
}

}  // namespace

MigrationResult migrate(credentials::Keyring& from, credentials::Keyring& to) {
    MigrationResult result;
    result.from = std::string(from.name());
    result.to = std::string(to.name());
    std::vector<std::string> written;
    std::vector<std::string> copied;
    for (const std::string& host : from.hosts()) {
        try {
            switch (copy_host(from, to, host)) {
                case Copied::written:
                    written.push_back(host);
                    copied.push_back(host);
                    break;
                case Copied::already_there:
                    copied.push_back(host);
                    break;
                case Copied::gone:
                    break;
            }
        } catch (const Error& e) {
            result.failed.push_back({host, e.code(), e.what()});
        } catch (const std::exception& e) {
            result.failed.push_back({host, ErrorCode::keyring_error, e.what()});
        }
    }
    if (!result.failed.empty()) {
        for (const std::string& host : written) take_back(to, host);
        spdlog::info("migrate from {} to {}: {} failed, nothing moved", result.from, result.to,
                     result.failed.size());
        return result;
    }
    for (const std::string& host : copied) {
        try {
            (void)from.remove(host);
        } catch (const Error& e) {
            result.leftover.push_back({host, e.code(), e.what()});
        }
        result.migrated.push_back(host);
    }
    result.switched = true;
    spdlog::info("migrate from {} to {}: {} moved ({} also left in the source)", result.from,
                 result.to, result.migrated.size(), result.leftover.size());
    return result;
}

}  // namespace hostkeeper::daemon::backends
