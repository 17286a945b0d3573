#pragma once
// A KeyringAdmin over two MemoryKeyrings for unit tests: migrate_to runs the
// real migration between them, at once (no worker thread).

#include <optional>
#include <string>

#include "daemon/backends/keyring_admin.hpp"
#include "memory_keyring.hpp"

namespace hostkeeper::test {

class FakeKeyringAdmin final : public daemon::backends::KeyringAdmin {
  public:
    FakeKeyringAdmin(MemoryKeyring& in_use, MemoryKeyring& other)
        : in_use_(in_use), other_(other) {}

    daemon::backends::KeyringState state() const override {
        daemon::backends::KeyringState s;
        s.backend = std::string(in_use_.name());
        s.configured = "auto";
        s.reason = "test";
        return s;
    }
    boost::asio::awaitable<daemon::backends::MigrationResult> migrate_to(
        std::string backend) override {
        if (backend != other_.name())
            throw proto::Error(proto::ErrorCode::bad_request, "unknown backend " + backend);
        co_return daemon::backends::migrate(in_use_, other_);
    }
    boost::asio::awaitable<void> unlock_keyring(std::optional<proto::Secret> password) override {
        if (password) unlocked_with = std::string(password->view());
        in_use_.unlock();
        co_return;
    }

    // The password the last unlock was given, if any.
    std::optional<std::string> unlocked_with;

  private:
    MemoryKeyring& in_use_;
    MemoryKeyring& other_;
};

}  // namespace hostkeeper::test
