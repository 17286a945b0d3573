#include "import.hpp"

#include <cstdio>
#include <set>
#include <string>

#include "exit_codes.hpp"
#include "file_io.hpp"
#include "hostkeeper/proto/error.hpp"
#include "hostkeeper/proto/hostname.hpp"
#include "hostkeeper/proto/secret.hpp"
#include "hostkeeper/proto/socket_path.hpp"
#include "launcher.hpp"
#include "plaintext_credentials.hpp"
#include "shadowing.hpp"

namespace hostkeeper::client {
namespace fs = std::filesystem;
using proto::Json;

namespace {

// Stores one host's object and reads it back. Throws proto::Error, NoDaemon
// (fatal: nothing can be imported) or std::runtime_error (read back wrong).
void store_and_verify(const ClientOptions& client, const std::string& host,
                      const Json& credentials) {
    Json store = proto::make_request(proto::Op::store);
    store["host"] = host;
    store["credentials"] = credentials;
    const struct Scrub {
        Json& json;
        ~Scrub() { proto::scrub(json); }
    } scrub_store{store};
    DaemonClient(client).call(store);

    Json get = proto::make_request(proto::Op::get);
    get["host"] = host;
    Json answer = DaemonClient(client).call(get);
    const Scrub scrub_answer{answer};
    if (!answer.value("found", false) || answer["credentials"] != credentials) {
        throw std::runtime_error("the keyring gave back something else than what was stored");
    }
}

// Imports one file's hosts; returns the number that failed.
int import_file(const ClientOptions& client, const ImportOptions& options, const fs::path& path) {
    const CredentialsFile file(path);
    const auto hosts = file.hosts();
    if (hosts.empty()) {
        std::printf("%s: no credentials in it\n", path.c_str());
        return 0;
    }
    std::set<std::string> imported;
    int failed = 0;
    for (const auto& host : hosts) {
        try {
            const std::string normalized = proto::normalize_hostname(host);
            store_and_verify(client, normalized, file.credentials(host));
            imported.insert(host);
            std::printf("%s: stored in the keyring and read back%s\n", host.c_str(),
                        normalized == host ? "" : (" (as " + normalized + ")").c_str());
        } catch (const NoDaemon&) {
            throw;  // no host can be imported: stop here, the file untouched
        } catch (const proto::UnsafeDirectory&) {
            throw;
        } catch (const std::exception& e) {
            ++failed;
            std::fprintf(stderr, "hostkeeper import: %s: not imported, it stays in %s: %s\n",
                         host.c_str(), path.c_str(), e.what());
        }
    }
    if (imported.empty()) return failed;
    if (options.keep_file) {
        std::printf(
            "%s: left as it is (--keep-file); while these hosts are in it, they shadow the "
            "keyring\n",
            path.c_str());
    } else if (file.rewrite_without(imported)) {
        std::printf("%s: removed (nothing was left in it)\n", path.c_str());
    } else {
        std::printf("%s: rewrote it without the %zu imported host(s); %zu left\n", path.c_str(),
                    imported.size(), hosts.size() - imported.size());
    }
    return failed;
}

}  // namespace

int run_import(const ClientOptions& client, const ImportOptions& options) {
    int failed = 0;
    bool any_file = false;
    for (const auto& path : credentials_file_paths()) {
        std::error_code ec;
        if (!fs::exists(path, ec)) continue;
        any_file = true;
        try {
            failed += import_file(client, options, path);
        } catch (const FileError& e) {
            ++failed;
            std::fprintf(stderr, "hostkeeper import: %s\n", e.what());
        }
    }
    if (!any_file) std::printf("no credentials.tfrc.json to import from\n");
    for (const auto& block : credentials_blocks()) {
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
        return kExitFailed;
    }
    return kExitOk;
}

}  // namespace hostkeeper::client
