#include "helper/cli/pass_doctor.hpp"

#include <cstdlib>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include "helper/cli/pass_store.hpp"
#include "helper/client/subprocess.hpp"
#include "proto/error.hpp"
#include "proto/file_io.hpp"
#include "proto/messages.hpp"

namespace hostkeeper::helper::cli {
namespace fs = std::filesystem;
using proto::Json;

namespace {

constexpr auto kGpgLimit = std::chrono::seconds(10);

std::vector<std::string> gpg_opts() {
    const char* text = std::getenv("PASSWORD_STORE_GPG_OPTS");
    return split_gpg_opts(text != nullptr ? text : "");
}

// --homedir from PASSWORD_STORE_GPG_OPTS, for gpg and gpg-connect-agent.
std::vector<std::string> homedir_args() {
    if (const auto dir = gpg_homedir_option(gpg_opts())) return {"--homedir", *dir};
    return {};
}

std::string until_newline(std::string text) {
    if (const auto nl = text.find('\n'); nl != std::string::npos) text.erase(nl);
    return text;
}

std::string concatenated(std::initializer_list<std::string_view> parts) {
    std::string out;
    for (const auto part : parts) out += part;
    return out;
}

const char* kInitFix = "pass init KEYID (with a key gpg --list-secret-keys shows)";

void check_recipients(const DoctorSink& report, const fs::path& store) {
    const auto files = pass_gpg_id_files(store);
    if (files.empty()) {
        report.fail("the password store " + store.string() + " has no .gpg-id", kInitFix);
        return;
    }
    for (const auto& file : files) {
        std::vector<std::string> ids;
        try {
            ids = read_gpg_ids(file);
        } catch (const proto::FileError& e) {
            report.fail(std::string("cannot read ") + e.what(), "chmod u+r " + file.string());
            continue;
        }
        if (ids.empty()) report.fail(file.string() + " names no key", kInitFix);
        for (const auto& id : ids) {
            std::vector<std::string> argv{"gpg"};
            const auto home = homedir_args();
            argv.insert(argv.end(), home.begin(), home.end());
            argv.insert(argv.end(), {"--batch", "--with-colons", "--list-secret-keys", "--", id});
            const client::Captured listed = client::run_captured(argv, kGpgLimit);
            if (listed.status == 127) {
                report.fail("gpg cannot be run", "apt install gnupg");
                return;
            }
            const std::string key = concatenated({id, " (", file.string(), ")"});
            if (listed.status != 0) {
                report.fail(
                    concatenated({"gpg has no secret key for ", key,
                                  ", so hostkeeperd cannot decrypt what is encrypted to it"}),
                    "import it (gpg --import), or re-encrypt the store to a key you "
                    "have: pass init KEYID");
                continue;
            }
            if (const auto problem = secret_key_problem(listed.out)) {
                report.fail(concatenated({"the key ", key, " ", problem->what}), problem->fix);
                continue;
            }
            report.ok(concatenated({"gpg has a usable secret key for ", key}));
        }
    }
}

void check_agent(const DoctorSink& report) {
    std::vector<std::string> argv{"gpg-connect-agent"};
    const auto home = homedir_args();
    argv.insert(argv.end(), home.begin(), home.end());
    argv.emplace_back("/bye");
    const client::Captured answer = client::run_captured(argv, kGpgLimit, true);
    if (answer.status == 0) {
        report.ok("gpg-agent answers (gpg-connect-agent /bye)");
    } else if (answer.status == 127) {
        report.fail("gpg-connect-agent cannot be run", "apt install gnupg");
    } else {
        report.fail("gpg-agent does not answer: " + until_newline(answer.out),
                    "check GNUPGHOME and its permissions (700), then gpgconf --kill gpg-agent");
    }
}

void check_writable(const DoctorSink& report, const fs::path& store, const Json& keyring) {
    const auto writable = keyring.find("store_writable");
    if (writable == keyring.end() || !writable->is_boolean()) {
        report.warn("hostkeeperd did not say whether it can write to " + store.string());
    } else if (writable->get<bool>()) {
        report.ok("hostkeeperd can write to the password store " + store.string());
    } else {
        report.fail("hostkeeperd cannot write to the password store " + store.string() +
                        " (terraform login cannot store tokens)",
                    "make " + store.string() +
                        " and its hostkeeper folder yours and writable "
                        "(chown -R, chmod u+rwX)");
    }
}

void check_decrypts(const DoctorSink& report, const client::ClientOptions& client,
                    const fs::path& store) {
    std::optional<std::string> host;
    for (const auto& file : pass_entry_files(store)) {
        if ((host = pass_entry_host(store, file))) break;
    }
    if (!host) {
        report.ok("no hostkeeper entries in " + (store / "hostkeeper").string() +
                  " yet: nothing to decrypt");
        return;
    }
    Json flush = proto::make_request(proto::Op::flush);
    flush["host"] = *host;
    Json get = proto::make_request(proto::Op::get);
    get["host"] = *host;
    try {
        client::DaemonClient(client).call(flush);  // decrypt now, not answer from the cache
        const Json answer = client::DaemonClient(client).call(get);
        if (!answer.value("found", false)) {
            report.fail("hostkeeperd finds no credentials for " + *host +
                            " although the store has an entry for it",
                        "look at it: pass show hostkeeper/" + *host);
            return;
        }
        report.ok("hostkeeperd decrypts the entry of " + *host + " without a prompt");
    } catch (const proto::Error& e) {
        if (e.code() == proto::ErrorCode::keyring_locked) {
            report.fail("hostkeeperd cannot decrypt the entry of " + *host +
                            " without a passphrase: " + e.what(),
                        "run hostkeeper unlock in a terminal (gpg-agent then keeps the "
                        "passphrase for its cache time)");
        } else {
            report.fail("hostkeeperd cannot read the entry of " + *host + ": " + e.what(),
                        "see the message; 'hostkeeperd --log-level debug' in a terminal shows "
                        "more");
        }
    }
}

}  // namespace

std::optional<KeyProblem> secret_key_problem(const std::string& colons) {
    const auto fields_of = [](const std::string& line) {
        std::vector<std::string> fields;
        std::istringstream parts(line);
        for (std::string field; std::getline(parts, field, ':');) fields.push_back(field);
        return fields;
    };
    std::istringstream in(colons);
    std::vector<std::string> sec;
    std::string fingerprint = "FINGERPRINT";
    for (std::string line; std::getline(in, line);) {
        if (sec.empty()) {
            if (line.rfind("sec:", 0) == 0) sec = fields_of(line);
        } else if (line.rfind("fpr:", 0) == 0) {
            // The primary key's fingerprint: the fpr line right after sec.
            const auto fpr = fields_of(line);
            if (fpr.size() > 9 && !fpr[9].empty()) fingerprint = fpr[9];
            break;
        } else {
            break;
        }
    }
    if (sec.empty()) return KeyProblem{"has no secret key", kInitFix};
    const std::string other_key = "re-encrypt the store to another key: pass init KEYID";
    const std::string validity = sec.size() > 1 ? sec[1] : "";
    if (validity == "e") {
        return KeyProblem{"has expired", "renew it (gpg --quick-set-expire " + fingerprint +
                                             " 1y, and its subkeys: gpg --quick-set-expire " +
                                             fingerprint + " 1y '*') or " + other_key};
    }
    if (validity == "r") return KeyProblem{"is revoked", other_key};
    if (validity == "d")
        return KeyProblem{"is disabled",
                          "enable it (gpg --edit-key " + fingerprint + " enable) or " + other_key};
    // Field 12: the whole key's usable capabilities in capitals. A valid key
    // without E has no encryption subkey, or only expired or revoked ones.
    const std::string caps = sec.size() > 11 ? sec[11] : "";
    if (caps.find('E') == std::string::npos) {
        return KeyProblem{
            "is valid but has no usable encryption subkey (none, or only expired "
            "or revoked ones), so nothing can be encrypted to it",
            "add one: gpg --quick-add-key " + fingerprint + " rsa3072 encr (or cv25519 encr), or " +
                other_key};
    }
    return std::nullopt;
}

void check_pass(const DoctorSink& report, const client::ClientOptions& client,
                const Json& keyring) {
    const auto it = keyring.find("store");
    if (it == keyring.end() || !it->is_string()) {
        report.fail("hostkeeperd uses pass but did not say where its store is",
                    "hostkeeper stop, then try again with the installed hostkeeperd");
        return;
    }
    const fs::path store = it->get<std::string>();
    check_recipients(report, store);
    check_agent(report);
    check_writable(report, store, keyring);
    check_decrypts(report, client, store);
}

}  // namespace hostkeeper::helper::cli
