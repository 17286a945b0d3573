#pragma once
// Which hosts the registry cache routes, and the files that say so: the
// hosts named by setup and those learned from Terraform's `get HOST`, each
// with the services its discovery document last offered; a host is routed
// while it offers modules.v1 or providers.v1. The tfrc files hold one `host`
// block per routed host (every service with its real URL, modules.v1 and
// providers.v1 pointed at the listener); the state file keeps the learned
// hosts and the last services across restarts, so that blocks survive an
// outage. Files are replaced atomically, 0600.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "proto/json.hpp"
#include "proto/registry_cache_file.hpp"

namespace hostkeeper::daemon::registry_cache {

struct RoutedHost {
    bool named = false;                   // from registry-cache.json
    std::optional<proto::Json> services;  // last discovery answer's services; none yet
    std::string reason;                   // why it is not routed ("" when it is)
};

// The tfrc text for `hosts` (only those routed), listener URLs below
// `base_url`; `suspended`: no block at all, and lines that say why.
std::string render_tfrc(const std::map<std::string, RoutedHost>& hosts, const std::string& base_url,
                        bool suspended = false);

// Whether `services` (discovery's, id -> value) make a host worth routing.
bool offers_registry(const proto::Json& services);

// The first line of every tfrc file hostkeeperd writes: proto's.
using proto::kTfrcHeader;

class RoutedHosts {
  public:
    RoutedHosts(const std::vector<std::string>& named, std::filesystem::path state_file,
                std::vector<std::filesystem::path> tfrc_files, std::string base_url);

    // Reads the state file (learned hosts, last services). A missing or
    // unreadable one starts empty; returns why it could not be read, if so.
    std::string load();

    bool routed(const std::string& host) const;
    bool known(const std::string& host) const { return hosts_.count(host) != 0; }
    const std::map<std::string, RoutedHost>& hosts() const { return hosts_; }

    // A discovery answer for `host` (learned if not named). Returns whether
    // the files must be rewritten (the routed set or a routed host's services changed).
    bool discovered(const std::string& host, const proto::Json& services);
    // Discovery failed for a host that is not routed yet: remember why (not routed).
    void failed(const std::string& host, const std::string& why);

    // While the registry port cannot be used, the tfrc files carry no block
    // (Terraform goes to the registries itself); `base_url` names the port.
    void suspend(bool suspended) { suspended_ = suspended; }
    bool suspended() const { return suspended_; }
    void base_url(std::string url) { base_url_ = std::move(url); }

    // Rewrites the state file and every tfrc file. Throws proto::FileError.
    void write() const;

    // status's "hosts" array.
    proto::Json status() const;

  private:
    std::map<std::string, RoutedHost> hosts_;
    std::filesystem::path state_file_;
    std::vector<std::filesystem::path> tfrc_files_;
    std::string base_url_;
    bool suspended_ = false;
};

}  // namespace hostkeeper::daemon::registry_cache
