#pragma once
// The Secret Service (gnome-keyring, KeePassXC, ...) through libsecret.
// Items: schema io.hostkeeper.Credentials, string attribute "host" (the
// normalized ASCII hostname), label "hostkeeper: HOST", the credentials JSON
// object as the secret, in the default collection.

#include <chrono>
#include <memory>

#include "keyring.hpp"

namespace hostkeeper::daemon {

class LibsecretKeyring final : public Keyring {
public:
    // `unlock_timeout`: how long an unlock prompt may take before the call
    // fails with keyring_locked.
    explicit LibsecretKeyring(std::chrono::milliseconds unlock_timeout);
    ~LibsecretKeyring() override;

    std::optional<proto::Secret> lookup(const std::string& host) override;
    void store(const std::string& host, const proto::Secret& credentials) override;
    bool remove(const std::string& host) override;

private:
    std::chrono::milliseconds unlock_timeout_;
};

}  // namespace hostkeeper::daemon
