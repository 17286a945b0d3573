#include "daemon/credentials/keyring_items.hpp"

#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <utility>

#include "daemon/async/on_worker.hpp"

namespace hostkeeper::daemon::credentials {
namespace asio = boost::asio;

// Each work item is named before it is awaited (async/toolchain.hpp).

asio::awaitable<std::vector<ItemInfo>> KeyringItems::items() {
    auto work = [this] { return TerraformItems(keyring_).items(); };
    co_return co_await async::on_worker(worker_, std::move(work));
}

asio::awaitable<std::optional<DockerCredentials>> KeyringItems::docker_get(std::string server) {
    auto work = [this, server] { return DockerItems(keyring_).lookup(server); };
    co_return co_await async::on_worker(worker_, std::move(work));
}

asio::awaitable<void> KeyringItems::docker_store(DockerCredentials credentials) {
    auto work = [this, stored = std::move(credentials)] { DockerItems(keyring_).store(stored); };
    co_await async::on_worker(worker_, std::move(work));
}

asio::awaitable<bool> KeyringItems::docker_erase(std::string server) {
    auto work = [this, server] { return DockerItems(keyring_).remove(server); };
    co_return co_await async::on_worker(worker_, std::move(work));
}

asio::awaitable<std::vector<DockerItemInfo>> KeyringItems::docker_items() {
    auto work = [this] { return DockerItems(keyring_).items(); };
    co_return co_await async::on_worker(worker_, std::move(work));
}

asio::awaitable<std::optional<GitCredential>> KeyringItems::git_find(proto::GitItemKey request) {
    auto work = [this, request] {
        return GitItems(keyring_).find(request, std::chrono::system_clock::now());
    };
    co_return co_await async::on_worker(worker_, std::move(work));
}

asio::awaitable<void> KeyringItems::git_store(GitCredential credential) {
    auto work = [this, stored = std::move(credential)] { GitItems(keyring_).store(stored); };
    co_await async::on_worker(worker_, std::move(work));
}

asio::awaitable<std::size_t> KeyringItems::git_erase(proto::GitItemKey request,
                                                     std::optional<proto::Secret> password) {
    auto work = [this, request, held = std::move(password)] {
        return GitItems(keyring_).erase(request, held);
    };
    co_return co_await async::on_worker(worker_, std::move(work));
}

asio::awaitable<std::vector<GitItemInfo>> KeyringItems::git_items() {
    auto work = [this] { return GitItems(keyring_).items(); };
    co_return co_await async::on_worker(worker_, std::move(work));
}

std::string KeyringItems::git_username(const std::string& host) const {
    const auto it = git_usernames_.find(host);
    return it != git_usernames_.end() ? it->second : std::string(proto::kDefaultGitUsername);
}

}  // namespace hostkeeper::daemon::credentials
