#include "daemon/backends/migration.hpp"

#include <spdlog/spdlog.h>

#include <optional>

#include "proto/secret.hpp"

namespace hostkeeper::daemon::backends {
using credentials::ItemKindDescription;
using credentials::MigratedItems;
using proto::Error;
using proto::ErrorCode;
using proto::Secret;

const std::vector<std::string>& MigrationResult::moved(credentials::ItemKind kind) const {
    static const std::vector<std::string> none;
    const auto it = migrated.find(kind);
    return it != migrated.end() ? it->second : none;
}

namespace {

void take_back(const MigratedItems& kind, credentials::Keyring& to, const std::string& key) {
    try {
        (void)kind.remove(to, key);
    } catch (const std::exception& e) {
        spdlog::warn("migrate: could not take {} {} out of {} again: {}", kind.what, key, to.name(),
                     e.what());
    }
}

enum class Copied { written, already_there, gone };

// Copies one item; throws proto::Error, having removed what it wrote.
Copied copy_item(const MigratedItems& kind, credentials::Keyring& from, credentials::Keyring& to,
                 const std::string& key) {
    const std::optional<Secret> source = kind.read(from, key);
    if (!source) return Copied::gone;
    if (const std::optional<Secret> existing = kind.read(to, key)) {
        if (existing->view() == source->view()) return Copied::already_there;
        throw Error(ErrorCode::keyring_error,
                    "the " + std::string(to.name()) +
                        " backend already holds other credentials for " + key +
                        "; remove the one that is wrong and run migrate again");
    }
    try {
        kind.write(to, key, *source);
        const std::optional<Secret> back = kind.read(to, key);
        if (!back || back->view() != source->view()) {
            throw Error(ErrorCode::keyring_error, "the credentials read back from " +
                                                      std::string(to.name()) +
                                                      " differ from what was written");
        }
    } catch (const Error&) {
        take_back(kind, to, key);
        throw;
    }
    return Copied::written;
}

// What was copied of one kind: `written` by this migration, `copied` in all.
struct Copies {
    std::vector<std::string> written;
    std::vector<std::string> copied;
};

Copies copy_all(const ItemKindDescription& kind, credentials::Keyring& from,
                credentials::Keyring& to, MigrationResult& result) {
    Copies out;
    for (const std::string& key : kind.migration.list(from)) {
        try {
            switch (copy_item(kind.migration, from, to, key)) {
                case Copied::written:
                    out.written.push_back(key);
                    out.copied.push_back(key);
                    break;
                case Copied::already_there:
                    out.copied.push_back(key);
                    break;
                case Copied::gone:
                    break;
            }
        } catch (const Error& e) {
            result.failed.push_back({kind.kind, key, e.code(), e.what()});
        } catch (const std::exception& e) {
            result.failed.push_back({kind.kind, key, ErrorCode::keyring_error, e.what()});
        }
    }
    return out;
}

void remove_sources(const ItemKindDescription& kind, credentials::Keyring& from,
                    const Copies& copies, MigrationResult& result) {
    std::vector<std::string>& migrated = result.migrated[kind.kind];
    for (const std::string& key : copies.copied) {
        try {
            (void)kind.migration.remove(from, key);
        } catch (const Error& e) {
            result.leftover.push_back({kind.kind, key, e.code(), e.what()});
        }
        migrated.push_back(key);
    }
}

// "3 hosts, 1 Docker servers and 0 git items": each kind's count moved.
std::string moved_counts(const MigrationResult& result) {
    const auto kinds = credentials::item_kinds();
    std::string out;
    for (std::size_t i = 0; i < kinds.size(); ++i) {
        if (i > 0) out += i + 1 == kinds.size() ? " and " : ", ";
        out += std::to_string(result.moved(kinds[i].kind).size()) + " " + kinds[i].migration.many;
    }
    return out;
}

}  // namespace

MigrationResult migrate(credentials::Keyring& from, credentials::Keyring& to) {
    MigrationResult result;
    result.from = std::string(from.name());
    result.to = std::string(to.name());
    const auto kinds = credentials::item_kinds();
    std::vector<Copies> copies;
    for (const ItemKindDescription& kind : kinds)
        copies.push_back(copy_all(kind, from, to, result));
    if (!result.failed.empty()) {
        for (std::size_t i = 0; i < kinds.size(); ++i)
            for (const std::string& key : copies[i].written) take_back(kinds[i].migration, to, key);
        spdlog::info("migrate from {} to {}: {} failed, nothing moved", result.from, result.to,
                     result.failed.size());
        return result;
    }
    for (std::size_t i = 0; i < kinds.size(); ++i)
        remove_sources(kinds[i], from, copies[i], result);
    result.switched = true;
    spdlog::info("migrate from {} to {}: {} moved ({} also left in the source)", result.from,
                 result.to, moved_counts(result), result.leftover.size());
    return result;
}

}  // namespace hostkeeper::daemon::backends
