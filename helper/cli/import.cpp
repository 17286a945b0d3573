#include "helper/cli/import.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "helper/client/exit_codes.hpp"
#include "helper/client/launcher.hpp"
#include "helper/terraform_config/plaintext_credentials.hpp"
#include "helper/terraform_config/shadowing.hpp"
#include "proto/error.hpp"
#include "proto/file_io.hpp"
#include "proto/hostname.hpp"
#include "proto/secret.hpp"
#include "proto/socket_path.hpp"

namespace hostkeeper::helper::cli {
namespace fs = std::filesystem;
using proto::Json;

namespace {

// Stores one host's object and reads it back. Throws proto::Error, NoDaemon
// (fatal: nothing can be imported) or std::runtime_error (read back wrong).
void store_and_verify(const client::ClientOptions& client, const std::string& host,
                      const Json& credentials) {
    Json store = proto::make_request(proto::Op::store);
    store["host"] = host;
    store["credentials"] = credentials;
    const struct Scrub {
        Json& json;
        ~Scrub() { proto::scrub(json); }
    } scrub_store{store};
    client::DaemonClient(client).call(store);

    // The daemon caches what it stored: drop that, so the get reads the keyring.
    Json flush = proto::make_request(proto::Op::flush);
    flush["host"] = host;
    client::DaemonClient(client).call(flush);

    Json get = proto::make_request(proto::Op::get);
    get["host"] = host;
    Json answer = client::DaemonClient(client).call(get);
    const Scrub scrub_answer{answer};
    if (!answer.value("found", false) || answer["credentials"] != credentials) {
        throw std::runtime_error("the keyring gave back something else than what was stored");
    }
}

// Imports one file's hosts; returns the number that failed.
int import_file(const client::ClientOptions& client, const ImportOptions& options,
                const fs::path& path) {
    std::map<std::string, Json> imported;  // as spelled in the file -> what was stored, verified
    const struct ScrubValues {
        std::map<std::string, Json>& values;
        ~ScrubValues() {
            for (auto& [host, value] : values) proto::scrub(value);
        }
    } imported_guard{imported};
    int failed = 0;
    const auto not_imported = [&](const std::string& host, const std::string& why) {
        ++failed;
        std::fprintf(stderr, "hostkeeper import: %s: not imported, it stays in %s: %s\n",
                     host.c_str(), path.c_str(), why.c_str());
    };
    {
        const terraform_config::CredentialsFile file(path);
        const auto hosts = file.hosts();
        if (hosts.empty()) {
            std::printf("%s: no credentials in it\n", path.c_str());
            return 0;
        }
        // Spellings that name one keyring item (tfe.example.com, TFE.example.com:443)
        // are one host: grouped, in file order of their first spelling.
        std::vector<std::pair<std::string, std::vector<std::string>>> groups;
        for (const auto& host : hosts) {
            std::string normalized;
            try {
                normalized = proto::normalize_hostname(host);
            } catch (const std::exception& e) {
                not_imported(host, e.what());
                continue;
            }
            auto it = std::find_if(groups.begin(), groups.end(),
                                   [&](const auto& group) { return group.first == normalized; });
            if (it == groups.end()) {
                groups.push_back({normalized, {host}});
            } else {
                it->second.push_back(host);
            }
        }
        for (const auto& [normalized, spellings] : groups) {
            const std::string& host = spellings.front();
            const Json& credentials = file.credentials(host);
            const bool conflict = std::any_of(
                spellings.begin(), spellings.end(),
                [&](const std::string& other) { return file.credentials(other) != credentials; });
            if (conflict) {
                for (const auto& spelling : spellings) {
                    not_imported(spelling, "the file has " + std::to_string(spellings.size()) +
                                               " different credentials for " + normalized +
                                               "; keep one of them in the file and import again");
                }
                continue;
            }
            try {
                store_and_verify(client, normalized, credentials);
                for (const auto& spelling : spellings) {
                    imported[spelling] = file.credentials(spelling);
                    std::printf("%s: stored in the keyring and read back%s\n", spelling.c_str(),
                                normalized == spelling ? "" : (" (as " + normalized + ")").c_str());
                }
            } catch (const client::NoDaemon&) {
                throw;  // no host can be imported: stop here, the file untouched
            } catch (const proto::UnsafeSocket&) {
                throw;
            } catch (const std::exception& e) {
                for (const auto& spelling : spellings) not_imported(spelling, e.what());
            }
        }
    }  // the first read's tokens are scrubbed here
    if (imported.empty()) return failed;
    if (options.keep_file) {
        std::printf(
            "%s: left as it is (--keep-file); while these hosts are in it, they shadow the "
            "keyring\n",
            path.c_str());
        return failed;
    }
    // Read the file again: what was written to it while we stored (terraform
    // login, an editor) stays; only hosts whose value is still what was
    // stored and verified leave it.
    std::error_code ec;
    if (!fs::exists(path, ec)) {
        std::printf("%s: removed by someone else meanwhile; nothing to rewrite\n", path.c_str());
        return failed;
    }
    std::optional<terraform_config::CredentialsFile> now;
    try {
        now.emplace(path);
    } catch (const proto::FileError& e) {
        throw proto::FileError(std::string(e.what()) + " (it changed while importing; the " +
                               std::to_string(imported.size()) +
                               " imported host(s) are in the keyring but still in the file too)");
    }
    const auto rewritten = now->rewrite_without(imported);
    for (const auto& host : rewritten.changed) {
        std::printf(
            "%s: changed in %s while importing; the new value stays in the file (run "
            "hostkeeper import again to move it)\n",
            host.c_str(), path.c_str());
    }
    if (rewritten.removed_file) {
        std::printf("%s: removed (nothing was left in it)\n", path.c_str());
    } else if (rewritten.removed_hosts > 0) {
        std::printf("%s: rewrote it without the %zu imported host(s); %zu left\n", path.c_str(),
                    rewritten.removed_hosts, rewritten.left_hosts);
    } else {
        std::printf("%s: left as it is (no imported host is in it as it was)\n", path.c_str());
    }
    return failed;
}

}  // namespace

int run_import(const client::ClientOptions& client, const ImportOptions& options) {
    int failed = 0;
    bool any_file = false;
    for (const auto& path : terraform_config::credentials_file_paths()) {
        std::error_code ec;
        if (!fs::exists(path, ec)) continue;
        any_file = true;
        try {
            failed += import_file(client, options, path);
        } catch (const proto::FileError& e) {
            ++failed;
            std::fprintf(stderr, "hostkeeper import: %s\n", e.what());
        }
    }
    if (!any_file) std::printf("no credentials.tfrc.json to import from\n");
    for (const auto& block : terraform_config::credentials_blocks()) {
        std::printf(
            "%s: credentials \"%s\" block: not edited; it shadows the keyring for that host: store "
            "its token "
            "with 'terraform-credentials-hostkeeper store %s' and delete the block\n",
            block.where.c_str(), block.host.c_str(), block.host.c_str());
    }
    if (failed > 0) {
        std::fprintf(stderr,
                     "hostkeeper import: %d host(s) or file(s) not imported; no token was lost\n",
                     failed);
        return client::kExitFailed;
    }
    return client::kExitOk;
}

}  // namespace hostkeeper::helper::cli
