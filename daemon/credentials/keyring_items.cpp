#include "daemon/credentials/keyring_items.hpp"

#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <set>
#include <utility>

#include "daemon/async/on_worker.hpp"

namespace hostkeeper::daemon::credentials {
namespace asio = boost::asio;

// Each work item is named before it is awaited (named first).

namespace {

// A git write, counted as begun when made and as ended when it goes (also
// by an exception): a listing that overlapped it is not kept.
class WriteBracket {
  public:
    explicit WriteBracket(std::uint64_t& writes) : writes_(writes) { ++writes_; }
    WriteBracket(const WriteBracket&) = delete;
    WriteBracket& operator=(const WriteBracket&) = delete;
    ~WriteBracket() { ++writes_; }

  private:
    std::uint64_t& writes_;
};

}  // namespace

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

bool KeyringItems::known_without_git_items(const std::string& host) const {
    return git_hosts_ && git_hosts_->writes == git_writes_ &&
           credentials_.still_current(git_hosts_->mark) && git_hosts_->hosts.count(host) == 0;
}

asio::awaitable<std::optional<GitCredential>> KeyringItems::git_find(proto::GitItemKey request) {
    if (known_without_git_items(request.host)) co_return std::nullopt;
    const CredentialService::ReadMark mark = credentials_.read_mark();
    const std::uint64_t writes = git_writes_;
    auto work = [this, request] {
        std::set<std::string> hosts;
        std::optional<GitCredential> found =
            GitItems(keyring_).find(request, std::chrono::system_clock::now(), &hosts);
        return std::make_pair(std::move(found), std::move(hosts));
    };
    auto [found, hosts] = co_await async::on_worker(worker_, std::move(work));
    git_hosts_ = GitHosts{mark, writes, std::move(hosts)};
    co_return std::move(found);
}

asio::awaitable<void> KeyringItems::git_store(GitCredential credential) {
    const WriteBracket bracket(git_writes_);
    auto work = [this, stored = std::move(credential)] { GitItems(keyring_).store(stored); };
    co_await async::on_worker(worker_, std::move(work));
}

asio::awaitable<std::size_t> KeyringItems::git_erase(proto::GitItemKey request,
                                                     std::optional<proto::Secret> password) {
    const WriteBracket bracket(git_writes_);
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
