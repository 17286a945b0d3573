#include "helper/cli/import.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "helper/cli/command.hpp"
#include "helper/client/exit_codes.hpp"
#include "helper/client/launcher.hpp"
#include "helper/client/printable_output.hpp"
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

// One file's import: the hosts that failed, and what was stored and
// verified (as spelled in the file), scrubbed when done.
struct FileImport {
    explicit FileImport(const fs::path& file) : path(file) {}
    FileImport(const FileImport&) = delete;
    FileImport& operator=(const FileImport&) = delete;
    ~FileImport() {
        for (auto& [host, value] : imported) proto::scrub(value);
        for (auto& [host, value] : replaced) proto::scrub(value);
    }

    void not_imported(const std::string& host, const std::string& why) {
        ++failed;
        std::fprintf(stderr, "hostkeeper import: %s: not imported, it stays in %s: %s\n",
                     host.c_str(), path.c_str(), why.c_str());
    }

    const fs::path& path;
    int failed = 0;
    std::map<std::string, Json> imported;
    // What this run changed in the keyring, to take back when storing fails:
    // the normalized hosts it created, and the earlier credentials of those it
    // replaced (scrubbed when done).
    std::vector<std::string> created;
    std::map<std::string, Json> replaced;
    std::size_t stored = 0;  // hosts stored and read back
    std::size_t hosts = 0;   // in the file, as spelled there
    // Set when the keyring could not store a host: nothing is imported then.
    std::optional<std::string> keyring_failure;
};

// Stops the whole import: the keyring, not the host's credentials, failed.
struct KeyringFailed : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The host's credentials as the keyring has them now, if any.
std::optional<Json> current_credentials(const client::ClientOptions& client,
                                        const std::string& host) {
    Json get = proto::make_request(proto::Op::get);
    get["host"] = host;
    Json answer = client::DaemonClient(client).call(get);
    std::optional<Json> found;
    if (answer.value("found", false)) found = answer["credentials"];
    proto::scrub(answer);
    return found;
}

// The daemon refused the host's credentials themselves (not the keyring):
// that host stays in the file while the others move.
bool refused_as_given(const proto::Error& e) {
    return e.code() == proto::ErrorCode::bad_request || e.code() == proto::ErrorCode::bad_host ||
           e.code() == proto::ErrorCode::too_large;
}

// A normalized host and its spellings in the file.
using Spellings = std::pair<std::string, std::vector<std::string>>;

// Spellings that name one keyring item (tfe.example.com, TFE.example.com:443)
// are one host: grouped, in file order of their first spelling.
std::vector<Spellings> group_spellings(const std::vector<std::string>& hosts, FileImport& run) {
    std::vector<Spellings> groups;
    for (const auto& host : hosts) {
        std::string normalized;
        try {
            normalized = proto::normalize_hostname(host);
        } catch (const std::exception& e) {
            run.not_imported(host, e.what());
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
    return groups;
}

// Stores one host (all its spellings agreeing) and reads it back.
void store_host(const client::ClientOptions& client, const terraform_config::CredentialsFile& file,
                const Spellings& group, FileImport& run) {
    const auto& [normalized, spellings] = group;
    const std::string& host = spellings.front();
    const Json& credentials = file.credentials(host);
    const bool conflict = std::any_of(
        spellings.begin(), spellings.end(),
        [&](const std::string& other) { return file.credentials(other) != credentials; });
    if (conflict) {
        for (const auto& spelling : spellings) {
            run.not_imported(spelling, "the file has " + std::to_string(spellings.size()) +
                                           " different credentials for " + normalized +
                                           "; keep one of them in the file and import again");
        }
        return;
    }
    try {
        std::optional<Json> before = current_credentials(client, normalized);
        if (before) {
            run.replaced.emplace(normalized, std::move(*before));
            proto::scrub(*before);
        } else {
            run.created.push_back(normalized);
        }
        store_and_verify(client, normalized, credentials);
        ++run.stored;
        for (const auto& spelling : spellings) {
            run.imported[spelling] = file.credentials(spelling);
            std::printf("%s: stored in the keyring and read back%s\n", spelling.c_str(),
                        normalized == spelling ? "" : (" (as " + normalized + ")").c_str());
        }
    } catch (const client::NoDaemon&) {
        throw;  // no host can be imported: stop here, the file untouched
    } catch (const proto::UnsafeSocket&) {
        throw;
    } catch (const proto::Error& e) {
        for (const auto& spelling : spellings) run.not_imported(spelling, e.what());
        if (!refused_as_given(e)) throw KeyringFailed(e.what());
    } catch (const std::exception& e) {
        for (const auto& spelling : spellings) run.not_imported(spelling, e.what());
        throw KeyringFailed(e.what());
    }
}

// Takes back what this run stored: the hosts it created are forgotten, the
// ones it replaced get their earlier credentials again. Returns how many
// could not be taken back (each named on stderr).
int take_back(const client::ClientOptions& client, FileImport& run) {
    int left = 0;
    for (const auto& host : run.created) {
        try {
            Json forget = proto::make_request(proto::Op::forget);
            forget["host"] = host;
            client::DaemonClient(client).call(forget);
        } catch (const std::exception& e) {
            ++left;
            client::print_printable(stderr,
                                    "hostkeeper import: %s: stored in this run but could not be "
                                    "removed again: %s (it is also still in %s)\n",
                                    host.c_str(), e.what(), run.path.c_str());
        }
    }
    for (auto& [host, credentials] : run.replaced) {
        try {
            store_and_verify(client, host, credentials);
        } catch (const std::exception& e) {
            ++left;
            client::print_printable(stderr,
                                    "hostkeeper import: %s: its earlier credentials could not be "
                                    "put back: %s (the keyring has the ones from %s, which still "
                                    "has them too)\n",
                                    host.c_str(), e.what(), run.path.c_str());
        }
    }
    return left;
}

// Stores every host of the file; false when it has none. The file's tokens
// are scrubbed when it returns.
bool store_hosts(const client::ClientOptions& client, FileImport& run) {
    const terraform_config::CredentialsFile file(run.path);
    const auto hosts = file.hosts();
    if (hosts.empty()) return false;
    run.hosts = hosts.size();
    for (const Spellings& group : group_spellings(hosts, run)) {
        try {
            store_host(client, file, group, run);
        } catch (const KeyringFailed& e) {
            run.keyring_failure = e.what();
            break;
        }
    }
    return true;
}

// Read the file again: what was written to it while we stored (terraform
// login, an editor) stays; only hosts whose value is still what was stored
// and verified leave it.
void rewrite_without_imported(const FileImport& run) {
    const fs::path& path = run.path;
    std::error_code ec;
    if (!fs::exists(path, ec)) {
        std::printf("%s: removed by someone else meanwhile; nothing to rewrite\n", path.c_str());
        return;
    }
    std::optional<terraform_config::CredentialsFile> now;
    try {
        now.emplace(path);
    } catch (const proto::FileError& e) {
        throw proto::FileError(std::string(e.what()) + " (it changed while importing; the " +
                               std::to_string(run.imported.size()) +
                               " imported host(s) are in the keyring but still in the file too)");
    }
    const auto rewritten = now->rewrite_without(run.imported);
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
}

// Imports one file's hosts; returns the number that failed.
int import_file(const client::ClientOptions& client, const ImportOptions& options,
                const fs::path& path) {
    FileImport run(path);
    if (!store_hosts(client, run)) {
        std::printf("%s: no credentials in it\n", path.c_str());
        return 0;
    }
    if (run.keyring_failure) {
        // All or nothing: a keyring that fails for one host leaves no half
        // import behind (and the file as it was).
        const int left = take_back(client, run);
        const std::string taken_back =
            run.stored == 0 ? std::string("nothing was stored before it")
                            : "the " + std::to_string(run.stored) +
                                  " host(s) stored before it in this run were taken back" +
                                  (left == 0 ? "" : " (except those named above)");
        client::print_printable(stderr,
                                "hostkeeper import: nothing imported from %s: the keyring could "
                                "not store a host, %s, and the file is left as it is; fix the "
                                "cause and run hostkeeper import again\n",
                                path.c_str(), taken_back.c_str());
        run.imported.clear();
        // Every host of the file stays in it.
        return static_cast<int>(run.hosts) + left;
    }
    if (run.imported.empty()) return run.failed;
    if (options.keep_file) {
        std::printf(
            "%s: left as it is (--keep-file); while these hosts are in it, they shadow the "
            "keyring\n",
            path.c_str());
        return run.failed;
    }
    rewrite_without_imported(run);
    return run.failed;
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

namespace {

class ImportCommand final : public Command {
  public:
    CLI::App* add_to(CLI::App& app) override {
        auto* cmd = app.add_subcommand("import",
                                       "move tokens from credentials.tfrc.json into the keyring, "
                                       "verified, then out of the file");
        cmd->add_flag("--keep-file", options_.keep_file,
                      "store and verify, but leave the file as it is");
        return cmd;
    }
    int run(const client::ClientOptions& client) override { return run_import(client, options_); }

  private:
    ImportOptions options_;
};

}  // namespace

std::unique_ptr<Command> import_command() {
    return std::make_unique<ImportCommand>();
}

}  // namespace hostkeeper::helper::cli
