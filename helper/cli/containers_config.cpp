#include "helper/cli/containers_config.hpp"

#include <sys/stat.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <system_error>

#include "helper/cli/answer_text.hpp"
#include "proto/file_io.hpp"
#include "proto/program_search.hpp"

namespace hostkeeper::helper::cli {
namespace fs = std::filesystem;
using proto::Json;

namespace {

constexpr std::string_view kContainersRecord = "containers_credential_helpers";
constexpr const char* kHostkeeperHelper = "hostkeeper";
constexpr const char* kDockerHelperProgram = "docker-credential-hostkeeper";
const fs::path kSystemRegistriesConf = "/etc/containers/registries.conf";
const fs::path kSystemRegistriesDir = "/etc/containers/registries.conf.d";

const std::string kDropInText =
    "# Added by \"hostkeeper setup --docker\"; \"hostkeeper setup --undo\" removes it.\n"
    "# Podman, Buildah and Skopeo store and read registry logins through\n"
    "# docker-credential-hostkeeper only: no password is written to an auth.json.\n"
    "credential-helpers = [\"hostkeeper\"]\n";

std::string env_or_empty(const char* name) {
    const char* value = std::getenv(name);
    return value != nullptr ? value : "";
}

// containers/image's home: $HOME (not $XDG_CONFIG_HOME) for registries.conf.
fs::path containers_home() {
    const std::string home = env_or_empty("HOME");
    return home.empty() ? fs::path("/") : fs::path(home);
}

fs::path user_registries_conf() {
    return containers_home() / ".config/containers/registries.conf";
}

fs::path user_registries_dir() {
    return containers_home() / ".config/containers/registries.conf.d";
}

fs::path drop_in_path() {
    return user_registries_dir() / "hostkeeper.conf";
}

// The *.conf entries of `dir` that are no directories, in name order (Go's
// filepath.WalkDir order); none when `dir` is missing.
std::vector<fs::path> drop_ins_of(const fs::path& dir) {
    std::vector<fs::path> found;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const fs::path& path = it->path();
        if (path.extension() != ".conf" || it->is_directory(ec)) continue;
        found.push_back(path);
    }
    std::sort(found.begin(), found.end());
    return found;
}

// The file's credential-helpers, when it sets them; nullopt for a missing file.
std::optional<std::vector<std::string>> helpers_in(const fs::path& path, const std::string& text) {
    toml::table table;
    try {
        table = toml::parse(text, path.string());
    } catch (const toml::parse_error& e) {
        throw proto::FileError(path.string() + " is not valid TOML (line " +
                               std::to_string(e.source().begin.line) + ": " +
                               std::string(e.description()) + ")");
    }
    const toml::node* node = table.get("credential-helpers");
    if (node == nullptr) return std::nullopt;
    const toml::array* array = node->as_array();
    std::vector<std::string> helpers;
    if (array != nullptr) {
        for (const auto& item : *array) {
            const auto value = item.value<std::string>();
            if (!value || !item.is_string()) {
                array = nullptr;
                break;
            }
            helpers.push_back(*value);
        }
    }
    if (array == nullptr)
        throw proto::FileError(path.string() + ": credential-helpers is not a list of strings");
    return helpers;
}

std::string quoted_list(const std::vector<std::string>& items) {
    std::string list = "[";
    for (const auto& item : items) list += (list.size() > 1 ? ", \"" : "\"") + item + "\"";
    return list + "]";
}

bool helper_listed(const std::vector<std::string>& helpers, const std::string& helper) {
    return std::find(helpers.begin(), helpers.end(), helper) != helpers.end();
}

// Stored through hostkeeper and never into an auth file.
bool secret_free(const std::vector<std::string>& helpers) {
    return helper_listed(helpers, kHostkeeperHelper) && !helper_listed(helpers, kAuthFileHelper);
}

// What an auth file (containers-auth.json(5)) says: the registries with a
// plaintext "auth" entry, and those whose credHelpers names hostkeeper.
struct AuthFileContents {
    std::vector<std::string> plaintext;
    std::vector<std::string> through_hostkeeper;
};

// nullopt when the file is missing; throws proto::FileError when it is no
// JSON object.
std::optional<AuthFileContents> read_auth_file(const fs::path& path) {
    const auto text = proto::read_file_if_exists(path);
    if (!text) return std::nullopt;
    Json document;
    try {
        document = proto::parse_json(*text);
    } catch (const proto::JsonError& e) {
        throw proto::FileError(path.string() + " is not valid JSON: " + e.what());
    }
    if (!document.is_object()) throw proto::FileError(path.string() + " is not a JSON object");
    AuthFileContents contents;
    if (const auto auths = document.find("auths"); auths != document.end() && auths->is_object()) {
        for (const auto& [registry, entry] : auths->items()) {
            const auto auth = entry.is_object() ? entry.find("auth") : entry.end();
            if (entry.is_object() && auth != entry.end() && auth->is_string() &&
                !auth->get<std::string>().empty())
                contents.plaintext.push_back(registry);
        }
    }
    if (const auto helpers = document.find("credHelpers");
        helpers != document.end() && helpers->is_object()) {
        for (const auto& [registry, helper] : helpers->items()) {
            if (helper.is_string() && helper.get<std::string>() == kHostkeeperHelper)
                contents.through_hostkeeper.push_back(registry);
        }
    }
    return contents;
}

// The auth files podman reads that the user keeps: the one it writes and
// $XDG_CONFIG_HOME/containers/auth.json.
std::vector<fs::path> auth_files() {
    std::vector<fs::path> files{containers_auth_file()};
    const fs::path config =
        proto::xdg_base_dir("XDG_CONFIG_HOME", ".config") / "containers/auth.json";
    if (config != files.front()) files.push_back(config);
    return files;
}

bool any_containers_tool() {
    const std::vector<std::string> tools{"podman", "buildah", "skopeo"};
    return std::any_of(tools.begin(), tools.end(), [](const std::string& tool) {
        return proto::find_program_on_path(tool).has_value();
    });
}

}  // namespace

ContainersRegistries read_containers_registries() {
    ContainersRegistries result;
    std::vector<std::pair<fs::path, bool>> paths;  // path, system
    const std::string chosen = env_or_empty("CONTAINERS_REGISTRIES_CONF");
    std::error_code ec;
    bool user_main = false;
    if (!chosen.empty()) {
        paths.emplace_back(chosen, false);
    } else if (fs::exists(user_registries_conf(), ec)) {
        paths.emplace_back(user_registries_conf(), false);
        user_main = true;
    } else {
        paths.emplace_back(kSystemRegistriesConf, true);
    }
    if (!user_main) {
        for (const auto& path : drop_ins_of(kSystemRegistriesDir)) paths.emplace_back(path, true);
    }
    for (const auto& path : drop_ins_of(user_registries_dir())) paths.emplace_back(path, false);
    for (const auto& [path, system] : paths) {
        const auto text = proto::read_file_if_exists(path);
        if (!text) continue;
        RegistriesFile file{path, system, helpers_in(path, *text)};
        if (file.helpers) {
            result.helpers = *file.helpers;
            result.decided_by = path;
        }
        result.files.push_back(std::move(file));
    }
    if (result.helpers.empty()) {
        result.helpers = {kAuthFileHelper};
        result.decided_by.clear();
    }
    return result;
}

fs::path containers_auth_file() {
    if (const std::string chosen = env_or_empty("REGISTRY_AUTH_FILE"); !chosen.empty())
        return chosen;
    if (const std::string runtime = env_or_empty("XDG_RUNTIME_DIR"); !runtime.empty())
        return fs::path(runtime) / "containers/auth.json";
    const uid_t uid = ::getuid();
    if (uid == 0) return "/run/containers/0/auth.json";
    // Rootless podman without XDG_RUNTIME_DIR: /run/user/UID when it is the
    // user's, else a directory of its own in /tmp.
    const fs::path run_user = "/run/user/" + std::to_string(uid);
    struct stat st {};
    if (::stat(run_user.c_str(), &st) == 0 && st.st_uid == uid && (st.st_mode & 0700) == 0700)
        return run_user / "containers/auth.json";
    const std::string tmp = env_or_empty("TMPDIR");
    return fs::path(tmp.empty() ? "/tmp" : tmp) / ("podman-run-" + std::to_string(uid)) /
           "containers/auth.json";
}

void plan_containers(Plan& plan) {
    ContainersRegistries registries;
    try {
        registries = read_containers_registries();
    } catch (const proto::FileError& e) {
        plan.refusals.push_back(std::string("podman: ") + e.what() +
                                "; podman refuses it too: fix it, then run hostkeeper setup "
                                "--docker again");
        return;
    }
    if (secret_free(registries.helpers)) {
        plan.notes.push_back("podman: credential-helpers = " + quoted_list(registries.helpers) +
                             " in " + registries.decided_by.string() +
                             " already stores every login through hostkeeper");
        return;
    }
    const fs::path file = drop_in_path();
    const std::size_t refusals = plan.refusals.size();
    for (const auto& other : registries.files) {
        // The administrator's files, and those saying what the drop-in says, it may replace.
        if (!other.helpers || other.system || secret_free(*other.helpers)) continue;
        plan.refusals.push_back(
            "podman: " + other.path.string() + " sets credential-helpers = " +
            quoted_list(*other.helpers) + ", which " + file.string() +
            " would replace; set it to [\"hostkeeper\"] there (\"containers-auth.json\" in it "
            "writes passwords into an auth.json) or remove it, then run hostkeeper setup --docker "
            "again");
    }
    std::error_code ec;
    if (fs::exists(fs::symlink_status(file, ec))) {
        plan.refusals.push_back("podman: " + file.string() +
                                " exists; move it away, then run hostkeeper setup --docker again");
    }
    if (plan.refusals.size() != refusals) return;
    if (!registries.decided_by.empty()) {
        plan.notes.push_back("podman: " + file.string() +
                             " replaces credential-helpers = " + quoted_list(registries.helpers) +
                             " of " + registries.decided_by.string());
    }
    for (const auto& path : auth_files()) {
        try {
            const auto contents = read_auth_file(path);
            if (!contents || contents->plaintext.empty()) continue;
            plan.notes.push_back("podman: " + path.string() + " holds plaintext logins for " +
                                 joined(contents->plaintext) +
                                 "; podman stops reading them: log in to those registries "
                                 "again, then delete their \"auths\" entries from the file");
        } catch (const proto::FileError&) {
            // doctor reports a file podman cannot read; setup does not need it.
        }
    }
    const std::string what = "credential-helpers = [\"hostkeeper\"] in " + file.string();
    plan.steps.push_back({"podman: would add " + what, "podman: added " + what, [file] {
                              // The directories setup creates, outermost first.
                              Json created = Json::array();
                              std::error_code exists_ec;
                              for (fs::path dir = file.parent_path();
                                   !dir.empty() && !fs::exists(dir, exists_ec);
                                   dir = dir.parent_path())
                                  created.insert(created.begin(), dir.string());
                              fs::create_directories(file.parent_path());
                              proto::write_file_atomically(file, kDropInText, 0644);
                              return Json{{"action", kContainersRecord},
                                          {"file", file.string()},
                                          {"content", kDropInText},
                                          {"created_dirs", created}};
                          }});
}

void check_containers(const DoctorSink& report) {
    if (!any_containers_tool()) {
        report.skip("podman: not installed (nor buildah, skopeo)");
        return;
    }
    const std::string fix = "hostkeeper setup --docker";
    // Plaintext passwords on disk, whatever the configuration.
    std::vector<std::string> through_hostkeeper;  // "REGISTRY (FILE)"
    const fs::path target = containers_auth_file();
    for (const auto& path : auth_files()) {
        try {
            const auto contents = read_auth_file(path);
            if (!contents) continue;
            if (!contents->plaintext.empty()) {
                report.fail("podman: " + path.string() + " holds the plaintext password of " +
                                joined(contents->plaintext),
                            "run " + fix +
                                ", log in to them again, then delete their \"auths\" "
                                "entries from the file");
            }
            for (const auto& registry : contents->through_hostkeeper)
                through_hostkeeper.push_back(registry + " (" + path.string() + ")");
        } catch (const proto::FileError& e) {
            report.fail(std::string("podman: ") + e.what(), "repair or remove the file");
        }
    }
    ContainersRegistries registries;
    try {
        registries = read_containers_registries();
    } catch (const proto::FileError& e) {
        report.fail(std::string("podman: ") + e.what() + "; podman refuses it too", "fix the file");
        return;
    }
    const std::string helpers = "credential-helpers = " + quoted_list(registries.helpers);
    if (!helper_listed(registries.helpers, kAuthFileHelper)) {
        if (!helper_listed(registries.helpers, kHostkeeperHelper)) {
            report.skip("podman: " + helpers + " in " + registries.decided_by.string() +
                        " does not name hostkeeper");
            return;
        }
        if (!proto::find_program_on_path(kDockerHelperProgram)) {
            report.fail("podman: " + helpers + " in " + registries.decided_by.string() + ", but " +
                            kDockerHelperProgram + " is not on PATH",
                        "install hostkeeper's package, or put " +
                            std::string(kDockerHelperProgram) + " on PATH");
            return;
        }
        report.ok("podman: " + helpers + " in " + registries.decided_by.string() +
                  ": logins are stored through hostkeeper, no auth.json gets a password");
        if (registries.helpers.front() != kHostkeeperHelper) {
            report.warn("podman: stores a login through " + registries.helpers.front() +
                        " first; what it accepts never reaches the keyring");
        }
        return;
    }
    const std::string where = registries.decided_by.empty()
                                  ? "no registries.conf sets credential-helpers"
                                  : helpers + " in " + registries.decided_by.string();
    if (!env_or_empty("REGISTRY_AUTH_FILE").empty()) {
        const auto contents = [&]() -> std::optional<AuthFileContents> {
            try {
                return read_auth_file(target);
            } catch (const proto::FileError&) {
                return std::nullopt;  // reported above
            }
        }();
        if (contents && !contents->through_hostkeeper.empty()) {
            report.ok("podman: logins to " + joined(contents->through_hostkeeper) +
                      " are stored through hostkeeper (credHelpers in $REGISTRY_AUTH_FILE " +
                      target.string() + ")");
            report.warn("podman: a login to any other registry writes its password into " +
                        target.string() + " (" + where + "); " + fix +
                        " stores every login through hostkeeper");
            return;
        }
    }
    if (!through_hostkeeper.empty()) {
        const bool runtime = env_or_empty("REGISTRY_AUTH_FILE").empty();
        report.fail("podman: podman login writes the password in plaintext to " + target.string() +
                        " (" + where + ") for any registry that file's own " +
                        "credHelpers does not name; credHelpers naming hostkeeper for " +
                        joined(through_hostkeeper) + " are read, never written through" +
                        (runtime ? ", and " + target.string() + " is gone after a reboot" : ""),
                    fix);
        return;
    }
    // Not set up for hostkeeper, as git may not be: the choice is the user's.
    report.skip("podman: does not ask hostkeeper (podman login writes passwords in plaintext to " +
                target.string() + " (" + where + "); " + fix + " stores them in the keyring)");
}

bool is_containers_record(const Json& action) {
    return action.is_object() && action.value("action", "") == kContainersRecord;
}

std::string undo_containers(const Json& action, bool dry_run) {
    const fs::path file = action.value("file", "");
    const std::string content = action.value("content", "");
    const auto text = file.empty() ? std::nullopt : proto::read_file_if_exists(file);
    if (!text || *text != content)
        return "left " + file.string() + " alone: it is no longer as setup wrote it";
    if (!dry_run) {
        proto::remove_file(file);
        const Json dirs = action.value("created_dirs", Json::array());
        for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
            std::error_code ec;
            if (it->is_string()) fs::remove(it->get<std::string>(), ec);  // only when empty
        }
    }
    return std::string(dry_run ? "would remove " : "removed ") + file.string();
}

}  // namespace hostkeeper::helper::cli
