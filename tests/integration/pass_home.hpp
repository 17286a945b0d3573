#pragma once
// A throw-away home for tests of the pass backend: a GNUPGHOME with a real
// key (its passphrase given by a stand-in pinentry that speaks the Assuan
// protocol), a real password store made by `pass init`, and the real daemon
// started on demand; D-Bus removed from the environment unless asked for.

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "user_home.hpp"

namespace hostkeeper::it {

inline constexpr const char* kPassphrase = "correct horse battery";

// gpg, gpgconf, gpg-connect-agent and pass, where Debian installs them.
inline std::string tool(const std::string& name) {
    for (const char* dir : {"/usr/bin/", "/bin/"}) {
        if (std::filesystem::exists(dir + name)) return dir + name;
    }
    return name;
}

class PassHome : public UserHome {
  public:
    // `with_bus`: keep this world's D-Bus session (its Secret Service).
    explicit PassHome(bool with_bus = false) {
        gnupg = root / "gnupg";
        store = root / "store";
        std::filesystem::create_directories(gnupg);
        std::filesystem::permissions(gnupg, std::filesystem::perms::owner_all,
                                     std::filesystem::perm_options::replace);
        options.env["GNUPGHOME"] = gnupg.string();
        options.env["PASSWORD_STORE_DIR"] = store.string();
        options.env["PASSWORD_STORE_GPG_OPTS"] = std::nullopt;
        options.env["GPG_TTY"] = std::nullopt;
        if (!with_bus) {
            // GLib also finds a bus at $XDG_RUNTIME_DIR/bus, where keyring-env.sh puts it.
            options.env["DBUS_SESSION_BUS_ADDRESS"] = std::nullopt;
            std::filesystem::create_directories(root / "run");
            std::filesystem::permissions(root / "run", std::filesystem::perms::owner_all,
                                         std::filesystem::perm_options::replace);
            options.env["XDG_RUNTIME_DIR"] = (root / "run").string();
        }
        // The pinentry gpg-agent runs: answers GETPIN with the passphrase
        // and counts how often it was started.
        write(root / "pinentry.sh",
              "#!/bin/sh\n"
              "echo asked >> '" +
                  (root / "pinentry.log").string() +
                  "'\n"
                  "echo 'OK Pleased to meet you'\n"
                  "while IFS= read -r line; do\n"
                  "  case \"$line\" in\n"
                  "    GETPIN*) printf 'D %s\\nOK\\n' '" +
                  kPassphrase +
                  "' ;;\n"
                  "    BYE*) echo OK; exit 0 ;;\n"
                  "    OPTION\\ ttyname=*) echo \"$line\" >> '" +
                  (root / "pinentry-tty.log").string() +
                  "'; echo OK ;;\n"
                  "    *) echo OK ;;\n"
                  "  esac\n"
                  "done\n",
              0755);
        write(gnupg / "gpg-agent.conf",
              "pinentry-program " + (root / "pinentry.sh").string() + "\n");
    }
    ~PassHome() {
        try {
            run({tool("gpgconf"), "--kill", "all"}, options);
        } catch (const std::exception&) {  // nothing to stop
        }
    }
    PassHome(const PassHome&) = delete;
    PassHome& operator=(const PassHome&) = delete;

    Result sh(const std::string& script, const std::optional<std::string>& input = {}) const {
        RunOptions o = options;
        o.input = input;
        return run({"/bin/sh", "-c", script}, o);
    }

    // A new key (with kPassphrase, or none), `pass init` to it; its fingerprint.
    std::string init_store(bool with_passphrase) {
        const std::string passphrase = with_passphrase ? kPassphrase : "";
        const Result made =
            run({tool("gpg"), "--batch", "--pinentry-mode", "loopback", "--passphrase", passphrase,
                 "--quick-gen-key", "HK Test <hk@example.invalid>", "future-default", "default",
                 "never"},
                options);
        REQUIRE(made.exit_code == 0);
        const Result listed = run({tool("gpg"), "--with-colons", "--list-secret-keys"}, options);
        std::istringstream in(listed.out);
        std::string fingerprint;
        for (std::string line; std::getline(in, line);) {
            if (line.rfind("fpr:", 0) == 0) {
                fingerprint = line.substr(line.find_first_not_of(':', 4));
                fingerprint = fingerprint.substr(0, fingerprint.find(':'));
                break;
            }
        }
        REQUIRE(!fingerprint.empty());
        INFO(listed.out);
        REQUIRE(run({tool("pass"), "init", fingerprint}, options).exit_code == 0);
        forget_passphrases();
        return fingerprint;
    }
    void insert(const std::string& entry, const std::string& text) const {
        RunOptions o = options;
        o.input = text;
        const Result r = run({tool("pass"), "insert", "-m", entry}, o);
        INFO(r.err);
        REQUIRE(r.exit_code == 0);
    }
    // gpg-agent drops every cached passphrase.
    void forget_passphrases() const {
        REQUIRE(run({tool("gpg-connect-agent"), "reloadagent", "/bye"}, options).exit_code == 0);
    }
    int pinentry_runs() const {
        std::ifstream in(root / "pinentry.log");
        int n = 0;
        for (std::string line; std::getline(in, line);) ++n;
        return n;
    }
    std::string config_text() const {
        std::ifstream in(config / "hostkeeper" / "config.toml");
        std::stringstream text;
        text << in.rdbuf();
        return text.str();
    }

    std::filesystem::path gnupg, store;
};

}  // namespace hostkeeper::it
