#pragma once
// What the keyring holds, read from the keyring itself rather than the
// credential cache: the hosts' items as a list (`list`), and the Docker
// credentials of docker-credential-hostkeeper and the git items of
// git-credential-hostkeeper, which are never cached (every read asks the
// keyring, so its lock rules are the keyring's own). Only which hosts have
// git items is kept, while the credential service's mark says the keyring
// has not changed: git_get for a host without any then goes straight to its
// Terraform token. Keyring calls run on the worker executor, as the
// credential service's do; everything else on the event loop.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "daemon/credentials/credential_service.hpp"
#include "daemon/credentials/docker_items.hpp"
#include "daemon/credentials/git_items.hpp"
#include "daemon/credentials/keyring.hpp"
#include "daemon/credentials/terraform_items.hpp"

namespace hostkeeper::daemon::credentials {

class KeyringItems {
  public:
    // `git_usernames`: config.toml's [hosts."HOST"] git_username, by normalized host.
    KeyringItems(boost::asio::any_io_executor worker, Keyring& keyring,
                 const CredentialService& credentials,
                 std::map<std::string, std::string> git_usernames = {})
        : worker_(std::move(worker)),
          keyring_(keyring),
          credentials_(credentials),
          git_usernames_(std::move(git_usernames)) {}

    boost::asio::awaitable<std::vector<ItemInfo>> items();
    boost::asio::awaitable<std::optional<DockerCredentials>> docker_get(std::string server);
    boost::asio::awaitable<void> docker_store(DockerCredentials credentials);
    boost::asio::awaitable<bool> docker_erase(std::string server);
    boost::asio::awaitable<std::vector<DockerItemInfo>> docker_items();

    // GitItems' find, store, erase and items, on the worker.
    boost::asio::awaitable<std::optional<GitCredential>> git_find(proto::GitItemKey request);
    boost::asio::awaitable<void> git_store(GitCredential credential);
    boost::asio::awaitable<std::size_t> git_erase(proto::GitItemKey request,
                                                  std::optional<proto::Secret> password);
    boost::asio::awaitable<std::vector<GitItemInfo>> git_items();
    // The username git is answered with a host's Terraform token: its
    // git_username, else "oauth2".
    std::string git_username(const std::string& host) const;

  private:
    // The hosts that had git items when they were last listed, with the
    // keyring's mark and the count of git writes made here at that time.
    struct GitHosts {
        CredentialService::ReadMark mark;
        std::uint64_t writes = 0;
        std::set<std::string> hosts;
    };
    bool known_without_git_items(const std::string& host) const;

    boost::asio::any_io_executor worker_;
    Keyring& keyring_;
    const CredentialService& credentials_;
    std::map<std::string, std::string> git_usernames_;
    std::optional<GitHosts> git_hosts_;
    std::uint64_t git_writes_ = 0;  // bumped before and after each git store and erase
};

}  // namespace hostkeeper::daemon::credentials
