#pragma once
// The Secret Service (gnome-keyring, KeePassXC, ...) through libsecret.
// The cold path (a lookup the daemon has not cached) costs SearchItems and
// GetSecret on a kept connection: no item proxies.
// Items: schema io.hostkeeper.Credentials, string attribute "host" (the
// normalized ASCII hostname), label "hostkeeper: HOST", the credentials JSON
// object as the secret, in the default collection. Docker credentials:
// schema io.hostkeeper.DockerCredentials, attributes "server" and
// "username", label "hostkeeper docker: SERVER", the secret as the secret.
//
// Every D-Bus call is bounded: an unlock prompt by `unlock_timeout`, any other
// call by the shorter of `unlock_timeout` and 10 s, so that a stopped or hung Secret Service is an
// error (keyring_unavailable) and never a request that waits forever. A call that fails because the
// connection went stale (the service was restarted: its old bus name and session are gone) is
// retried once on a new connection.

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "daemon/credentials/keyring.hpp"

namespace hostkeeper::daemon::libsecret {

class CallWatchdog;

class LibsecretKeyring final : public credentials::Keyring {
  public:
    explicit LibsecretKeyring(std::chrono::milliseconds unlock_timeout);
    ~LibsecretKeyring() override;

    std::optional<proto::Secret> lookup(const std::string& host) override;
    void store(const std::string& host, const proto::Secret& credentials) override;
    bool remove(const std::string& host) override;
    std::vector<std::string> hosts() override;
    std::vector<credentials::ItemInfo> items() override;
    std::optional<credentials::DockerCredentials> docker_lookup(const std::string& server) override;
    void docker_store(const credentials::DockerCredentials& credentials) override;
    bool docker_remove(const std::string& server) override;
    std::vector<credentials::DockerItemInfo> docker_items() override;
    void unlock() override;
    std::string_view name() const override { return "secret-service"; }

    // Whether this process can use the Secret Service: a session bus
    // (proto::session_bus_address; no autolaunch), a service answering on
    // it, and a default collection. `detail` says what was found or why not.
    // Never prompts. Worker thread.
    struct Probe {
        bool usable = false;
        std::string detail;
    };
    Probe probe();

    // Any thread: the Secret Service's bus name changed owner (restarted,
    // gone, back); the next call starts on a new connection.
    void service_replaced();

  private:
    template <typename F>
    auto attempt(F f);
    std::optional<proto::Secret> lookup_once(const std::string& host);
    void store_once(const std::string& host, const proto::Secret& credentials);
    bool remove_once(const std::string& host);
    std::vector<credentials::ItemInfo> items_once();

    std::chrono::milliseconds unlock_timeout_;
    std::chrono::milliseconds call_timeout_;
    std::atomic<bool> replaced_{false};
    std::unique_ptr<CallWatchdog> watchdog_;
};

}  // namespace hostkeeper::daemon::libsecret
