#pragma once
// hostkeeper's place in the configuration of Podman, Buildah and Skopeo (the
// users of containers/image), read as containers/image 5.23 reads it.
//
// Which credential helpers `podman login` stores a login through is the
// top-level `credential-helpers` list of containers-registries.conf(5): the
// main file ($CONTAINERS_REGISTRIES_CONF, else ~/.config/containers/
// registries.conf when it exists, else /etc/containers/registries.conf), then
// the drop-ins (*.conf) of /etc/containers/registries.conf.d (not when the
// user's own registries.conf is the main file) and of
// ~/.config/containers/registries.conf.d, each in name order; the last file
// that sets the list wins, and none setting it means ["containers-auth.json"]:
// the login goes into ONE auth file ($REGISTRY_AUTH_FILE or --authfile, else
// $XDG_RUNTIME_DIR/containers/auth.json, which is gone at reboot), in
// plaintext unless that very file's credHelpers names a helper for the
// registry. A credHelpers object in ~/.config/containers/auth.json is read,
// never written through.
//
// setup --docker adds the drop-in ~/.config/containers/registries.conf.d/
// hostkeeper.conf with `credential-helpers = ["hostkeeper"]`: every login is
// stored through docker-credential-hostkeeper, no auth.json is written, and
// it survives a reboot. A drop-in, not a line in ~/.config/containers/
// registries.conf: creating that file would hide /etc/containers/
// registries.conf and its drop-ins from the user's tools. --undo removes the
// drop-in when it is still as setup wrote it. doctor's check says whether a
// login would be written in plaintext.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "helper/cli/doctor_sink.hpp"
#include "helper/cli/setup_plan.hpp"
#include "proto/json.hpp"

namespace hostkeeper::helper::cli {

// containers/image's name for "the auth file" in credential-helpers.
inline constexpr const char* kAuthFileHelper = "containers-auth.json";

// One registries.conf file containers/image reads, with its
// credential-helpers when it sets them.
struct RegistriesFile {
    std::filesystem::path path;
    bool system = false;  // under /etc/containers: the administrator's
    std::optional<std::vector<std::string>> helpers;
};

struct ContainersRegistries {
    std::vector<RegistriesFile> files;  // in the order they are read
    std::vector<std::string> helpers;   // in effect (the default when no file sets them)
    std::filesystem::path decided_by;   // the file that set them; empty for the default
};

// Reads the files as containers/image does (missing main file: none).
// Throws proto::FileError naming a file that is not valid TOML, or whose
// credential-helpers is not a list of strings (podman refuses both).
ContainersRegistries read_containers_registries();

// The auth file `podman login` writes when credential-helpers names the auth
// file: $REGISTRY_AUTH_FILE, else $XDG_RUNTIME_DIR/containers/auth.json, else
// the runtime directory podman chooses for the uid.
std::filesystem::path containers_auth_file();

// Adds the step (or a note, or a refusal) for --docker to `plan`.
void plan_containers(Plan& plan);

// Whether a podman login would be stored through hostkeeper, and whether an
// auth file holds a plaintext password (skip when none of podman, buildah,
// skopeo is installed).
void check_containers(const DoctorSink& report);

// True for the record plan_containers's step leaves in setup.json.
bool is_containers_record(const proto::Json& action);
// Reverses one such record; what happened, for the user.
std::string undo_containers(const proto::Json& action, bool dry_run);

}  // namespace hostkeeper::helper::cli
