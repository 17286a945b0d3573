#include "helper/cli/keyring_cli.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "helper/cli/answer_text.hpp"
#include "helper/cli/command.hpp"
#include "helper/cli/keyring_config.hpp"
#include "helper/cli/pass_store.hpp"
#include "helper/client/exit_codes.hpp"
#include "helper/client/printable_output.hpp"
#include "helper/client/subprocess.hpp"
#include "helper/client/terminal_password.hpp"
#include "proto/error.hpp"
#include "proto/file_io.hpp"
#include "proto/messages.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::helper::cli {
namespace fs = std::filesystem;
using proto::Json;

namespace {

// A migrate entry's name: its host, or "docker SERVER" for Docker credentials.
std::string item_name(const Json& entry) {
    if (const std::string url = text_of(entry, "url"); !url.empty()) return "git " + url;
    const std::string server = text_of(entry, "server");
    return server.empty() ? text_of(entry, "host", "?") : "docker " + server;
}

Json keyring_of(client::DaemonClient& daemon) {
    const Json status = daemon.call(proto::make_request(proto::Op::status));
    const auto it = status.find("keyring");
    // A daemon from before the pass backend knows only the Secret Service.
    if (it == status.end() || !it->is_object()) return Json{{"backend", "secret-service"}};
    return *it;
}

// The terminal gpg-agent's pinentry should ask on: the one of stdin.
std::vector<std::string> gpg_tty_environment() {
    if (::isatty(0) == 0) return {};
    const char* tty = ::ttyname(0);
    if (tty == nullptr) return {};
    return {std::string("GPG_TTY=") + tty};
}

// A store with no hostkeeper entry yet: an empty message encrypted to the
// store's recipients (kept in memory) is decrypted, so that gpg-agent asks
// for the passphrase now and `hostkeeper import` finds it cached.
int unlock_empty_store(const fs::path& store, const std::vector<std::string>& opts,
                       const std::vector<std::string>& env) {
    const std::vector<fs::path> id_files = pass_gpg_id_files(store);
    const std::vector<std::string> ids =
        id_files.empty() ? std::vector<std::string>{} : read_gpg_ids(id_files.front());
    if (ids.empty()) {
        client::print_printable(
            stderr, "hostkeeper unlock: %s has no .gpg-id: run pass init KEY-ID first\n",
            store.c_str());
        return client::kExitFailed;
    }
    std::vector<std::string> encrypt{"gpg",           "--quiet", "--batch",
                                     "--trust-model", "always",  "--encrypt"};
    encrypt.insert(encrypt.end(), opts.begin(), opts.end());
    for (const auto& id : ids) encrypt.insert(encrypt.end(), {"--recipient", id});
    const client::Captured probe = client::run_captured(encrypt, std::chrono::seconds(30), true);
    // The decrypting gpg reads the probe from a memory file it inherits.
    const int memory = ::memfd_create("hostkeeper-unlock-probe", 0);
    if (probe.status != 0 || memory < 0 ||
        ::write(memory, probe.out.data(), probe.out.size()) !=
            static_cast<ssize_t>(probe.out.size())) {
        if (memory >= 0) ::close(memory);
        client::print_printable(
            stdout, "FAILED   no entries yet, and gpg could not encrypt a probe to %s: %s\n",
            id_files.front().c_str(), probe.out.c_str());
        return client::kExitFailed;
    }
    ::lseek(memory, 0, SEEK_SET);
    std::vector<std::string> decrypt{"gpg", "--quiet", "--decrypt", "--output", "/dev/null"};
    decrypt.insert(decrypt.end(), opts.begin(), opts.end());
    decrypt.push_back("/dev/fd/" + std::to_string(memory));
    const int status = client::run_attached(decrypt, env);
    ::close(memory);
    if (status != 0) {
        client::print_printable(
            stdout,
            "FAILED   no entries yet, and a probe to the store's key could not be "
            "decrypted (gpg exit status %d)\n",
            status);
        return client::kExitFailed;
    }
    client::print_printable(
        stdout, "no hostkeeper entries yet; gpg-agent has the passphrase of the store's key\n");
    return client::kExitOk;
}

int unlock_pass(client::DaemonClient& daemon, const Json& keyring) {
    const fs::path store = text_of(keyring, "store");
    if (store.empty()) {
        client::print_printable(stderr,
                                "hostkeeper unlock: hostkeeperd did not say where its store is\n");
        return client::kExitFailed;
    }
    const PassEntries entries = pass_entries(store);
    const std::vector<fs::path>& files = entries.files;
    const char* opts_text = std::getenv("PASSWORD_STORE_GPG_OPTS");
    const auto opts = split_gpg_opts(opts_text != nullptr ? opts_text : "");
    const auto env = gpg_tty_environment();
    if (files.empty() && entries.links.empty()) return unlock_empty_store(store, opts, env);
    if (files.empty()) {
        // Only links, which hostkeeper does not follow: nothing of ours to decrypt.
        client::print_printable(stdout, "no hostkeeper entries in %s: nothing to unlock\n",
                                (store / "hostkeeper").c_str());
        return client::kExitOk;
    }
    std::vector<std::string> failed;
    for (const auto& file : files) {
        // --quiet: gpg names the key it decrypts with once per entry otherwise;
        // its errors and the passphrase prompt stay.
        std::vector<std::string> argv{"gpg", "--quiet", "--decrypt", "--output", "/dev/null"};
        argv.insert(argv.end(), opts.begin(), opts.end());
        argv.push_back(file.string());
        const int status = client::run_attached(argv, env);
        const std::string name = fs::relative(file, store).string();
        if (status == 0) {
            client::print_printable(stdout, "unlocked %s\n", name.c_str());
        } else {
            client::print_printable(stdout, "FAILED   %s (gpg exit status %d%s)\n", name.c_str(),
                                    status, status == 127 ? ": gpg could not be run" : "");
            failed.push_back(name);
        }
        std::fflush(stdout);
    }
    // Answers the daemon worked out while the key was locked are dropped.
    daemon.call(proto::make_request(proto::Op::flush));
    if (!failed.empty()) {
        client::print_printable(stdout, "%zu of %zu entries could not be decrypted\n",
                                failed.size(), files.size());
        return client::kExitFailed;
    }
    client::print_printable(stdout, "gpg-agent has the passphrase for all %zu entries\n",
                            files.size());
    return client::kExitOk;
}

// The tries `hostkeeper unlock` gives a password typed at the terminal.
constexpr int kPasswordTries = 3;

// The default collection unlocked with the keyring's password, typed at the
// terminal on standard input (the Secret Service's prompt could not be
// shown or was not answered). The daemon makes the D-Bus call: hostkeeper
// links no D-Bus library, and the password crosses the per-user socket
// once, as a stored token does (PROTOCOL.md, unlock).
int unlock_with_typed_password(client::DaemonClient& daemon) {
    client::print_printable(stderr,
                            "hostkeeper unlock: the Secret Service showed no unlock prompt, or it "
                            "was dismissed or not answered in time; type the keyring's password "
                            "here instead (it is not shown; an empty line cancels)\n");
    for (int attempt = 1; attempt <= kPasswordTries; ++attempt) {
        const std::optional<proto::Secret> password =
            client::read_terminal_password(STDIN_FILENO, "Password of the keyring: ");
        if (!password) {
            client::print_printable(stderr,
                                    "hostkeeper unlock: no password typed; the keyring stays "
                                    "locked\n");
            return client::kExitFailed;
        }
        Json request = proto::make_request(proto::Op::unlock);
        request["password"] = password->view();
        const proto::ScrubGuard guard(request);
        try {
            daemon.call(request);
            client::print_printable(stdout,
                                    "the Secret Service's default collection is unlocked\n");
            return client::kExitOk;
        } catch (const proto::Error& e) {
            // keyring_locked: the password was refused, and it may be typed again.
            if (e.code() != proto::ErrorCode::keyring_locked || attempt == kPasswordTries) throw;
            client::print_printable(stderr, "hostkeeper unlock: %s; try again\n", e.what());
        }
    }
    return client::kExitFailed;  // not reached: the last try returns or throws
}

int unlock_secret_service(client::DaemonClient& daemon) {
    try {
        daemon.call(proto::make_request(proto::Op::unlock));
    } catch (const proto::Error& e) {
        if (e.code() != proto::ErrorCode::keyring_locked) throw;
        if (::isatty(STDIN_FILENO) == 0) {
            throw proto::Error(e.code(), std::string(e.what()) +
                                             "; or run hostkeeper unlock in a terminal, where "
                                             "it asks for the keyring's password");
        }
        return unlock_with_typed_password(daemon);
    }
    client::print_printable(stdout, "the Secret Service's default collection is unlocked\n");
    return client::kExitOk;
}

}  // namespace

std::vector<std::string> keyring_status_lines(const Json& keyring) {
    std::vector<std::string> lines;
    const auto backend = keyring.find("backend");
    const std::string name =
        backend != keyring.end() && backend->is_string() ? backend->get<std::string>() : "none";
    const std::string configured = text_of(keyring, "configured", "auto");
    std::string line = "keyring backend: " + name + " (configured: " + configured + ")";
    if (const std::string reason = text_of(keyring, "reason"); !reason.empty())
        line += ": " + reason;
    lines.push_back(line);
    if (const std::string store = text_of(keyring, "store"); !store.empty()) {
        const auto writable = keyring.find("store_writable");
        std::string where = "password store: " + store;
        if (writable != keyring.end() && writable->is_boolean())
            where += writable->get<bool>() ? " (writable)" : " (NOT writable)";
        lines.push_back(where);
    }
    const auto tried = keyring.find("tried");
    if (configured == "auto" && tried != keyring.end() && tried->is_array()) {
        for (const auto& probe : *tried) {
            if (!probe.is_object()) continue;
            std::string entry = "  tried " + text_of(probe, "backend", "?") + ": " +
                                (probe.value("usable", false) ? "usable" : "not usable");
            if (const std::string detail = text_of(probe, "detail"); !detail.empty())
                entry += ": " + detail;
            lines.push_back(entry);
        }
    }
    return lines;
}

int run_unlock(const client::ClientOptions& client) {
    client::DaemonClient daemon(client);
    const Json keyring = keyring_of(daemon);
    const auto backend = keyring.find("backend");
    if (backend == keyring.end() || !backend->is_string()) {
        client::print_printable(stderr,
                                "hostkeeper unlock: hostkeeperd has no keyring backend: %s\n",
                                text_of(keyring, "reason", "no reason given").c_str());
        return client::kExitFailed;
    }
    if (*backend == "pass") return unlock_pass(daemon, keyring);
    return unlock_secret_service(daemon);
}

int run_migrate(const client::ClientOptions& client, const std::string& to) {
    Json request = proto::make_request(proto::Op::migrate);
    request["to"] = to;
    Json answer;
    try {
        answer = client::DaemonClient(client).call(request);
    } catch (const proto::Error& e) {
        if (e.code() == proto::ErrorCode::timeout || e.code() == proto::ErrorCode::busy) throw;
        client::print_printable(stderr,
                                "hostkeeper migrate: hostkeeperd refused: %s (%s); nothing moved\n",
                                e.what(), std::string(proto::to_string(e.code())).c_str());
        return client::kExitFailed;
    }
    const std::string from = text_of(answer, "from", "?");
    std::size_t moved = 0, failed = 0;
    if (const auto it = answer.find("migrated"); it != answer.end() && it->is_array()) {
        for (const auto& host : *it) {
            if (!host.is_string()) continue;
            ++moved;
            client::print_printable(stdout, "moved    %s\n", host.get<std::string>().c_str());
        }
    }
    if (const auto it = answer.find("docker_migrated"); it != answer.end() && it->is_array()) {
        for (const auto& server : *it) {
            if (!server.is_string()) continue;
            ++moved;
            client::print_printable(stdout, "moved    docker %s\n",
                                    server.get<std::string>().c_str());
        }
    }
    if (const auto it = answer.find("git_migrated"); it != answer.end() && it->is_array()) {
        for (const auto& url : *it) {
            if (!url.is_string()) continue;
            ++moved;
            client::print_printable(stdout, "moved    git %s\n", url.get<std::string>().c_str());
        }
    }
    if (const auto it = answer.find("failed"); it != answer.end() && it->is_array()) {
        for (const auto& entry : *it) {
            if (!entry.is_object()) continue;
            ++failed;
            client::print_printable(stdout, "FAILED   %s: %s (%s)\n", item_name(entry).c_str(),
                                    text_of(entry, "message").c_str(),
                                    text_of(entry, "code", "?").c_str());
        }
    }
    if (!answer.value("switched", false)) {
        // All or nothing (PROTOCOL.md): the hosts that could be copied were taken back.
        client::print_printable(
            stdout,
            "nothing moved: %zu item(s) failed, so every copy was taken back out of %s; "
            "hostkeeperd still uses %s; fix the failed hosts and run this again\n",
            failed, to.c_str(), from.c_str());
        return client::kExitFailed;
    }
    std::size_t leftover = 0;
    if (const auto it = answer.find("leftover"); it != answer.end() && it->is_array()) {
        for (const auto& entry : *it) {
            if (!entry.is_object()) continue;
            ++leftover;
            client::print_printable(
                stdout, "LEFT     %s: moved, but it could not be removed from %s: %s (%s)\n",
                item_name(entry).c_str(), from.c_str(), text_of(entry, "message").c_str(),
                text_of(entry, "code", "?").c_str());
        }
    }
    client::print_printable(stdout, "%zu item(s) moved from %s to %s%s\n", moved, from.c_str(),
                            to.c_str(),
                            leftover == 0 ? "" : ", some also left in the source (above)");
    const fs::path config = daemon_config_path();
    try {
        write_keyring_backend(config, to);
    } catch (const proto::FileError& e) {
        client::print_printable(
            stderr,
            "hostkeeper migrate: hostkeeperd now uses %s, but %s could not be written "
            "(%s): add backend = \"%s\" under [keyring] there, or the next hostkeeperd "
            "uses %s again\n",
            to.c_str(), config.c_str(), e.what(), to.c_str(), from.c_str());
        return client::kExitFailed;
    }
    client::print_printable(
        stdout, "hostkeeperd now uses %s; wrote backend = \"%s\" under [keyring] in %s\n",
        to.c_str(), to.c_str(), config.c_str());
    return leftover == 0 ? client::kExitOk : client::kExitFailed;
}

namespace {

class UnlockCommand final : public Command {
  public:
    CLI::App* add_to(CLI::App& app) override {
        return app.add_subcommand(
            "unlock",
            "unlock the keyring: the Secret Service's default collection (where its prompt "
            "cannot be shown, the keyring's password typed in this terminal), or pass's gpg "
            "key (gpg-agent asks for the passphrase in this terminal and caches it)");
    }
    // The user types a passphrase meanwhile: no deadline unless --timeout says.
    std::optional<std::chrono::milliseconds> default_timeout() const override {
        return std::chrono::hours(1);
    }
    int run(const client::ClientOptions& client) override { return run_unlock(client); }
};

class MigrateCommand final : public Command {
  public:
    CLI::App* add_to(CLI::App& app) override {
        auto* cmd = app.add_subcommand(
            "migrate",
            "move every token to the other keyring backend (each read back before it is "
            "removed), then keep using that backend");
        cmd->add_option("--to", to_, "the backend to move to")
            ->required()
            ->check(CLI::IsMember({"pass", "secret-service"}));
        cmd->footer(
            "Exit status 0 when every host moved and the daemon switched (config.toml then says "
            "backend = \"TO\" under [keyring]); 1 when a host failed (it stays where it was) or "
            "the daemon refused.");
        return cmd;
    }
    // Every host is written, read back and removed, perhaps after an unlock prompt.
    std::optional<std::chrono::milliseconds> default_timeout() const override {
        return std::chrono::minutes(10);
    }
    int run(const client::ClientOptions& client) override { return run_migrate(client, to_); }

  private:
    std::string to_;
};

}  // namespace

std::unique_ptr<Command> unlock_command() {
    return std::make_unique<UnlockCommand>();
}
std::unique_ptr<Command> migrate_command() {
    return std::make_unique<MigrateCommand>();
}

}  // namespace hostkeeper::helper::cli
