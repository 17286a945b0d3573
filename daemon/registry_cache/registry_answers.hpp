#pragma once
// The registry cache's answers, once the gate let a request through: module
// and provider documents in Terraform's formats (registry_answers.cpp),
// archives from the store and the network mirror (archive_answers.cpp), the
// answers kept on disk (DocumentSnapshots), and the archives the answers
// named, so that the listener fetches only those, each with the token of
// the host whose answer named it when it lives on that host's own origin.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <deque>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/archives/archive_store.hpp"
#include "daemon/credentials/token_lifecycle.hpp"
#include "daemon/registry/registry_service.hpp"
#include "daemon/registry_cache/document_snapshots.hpp"
#include "daemon/registry_cache/listener_messages.hpp"
#include "daemon/registry_cache/listener_routes.hpp"
#include "proto/json.hpp"
#include "proto/registry_address.hpp"

namespace hostkeeper::daemon::registry_cache {

class RegistryAnswers {
  public:
    // Archives named, remembered at most this many.
    static constexpr std::size_t kMaxPending = 4096;
    // Archives whose download an answer starts before Terraform asks for
    // them, at most this many at once (each until its first bytes are in);
    // and, counted apart, documents fetched ahead of Terraform's request
    // (package documents, SHA256SUMS, signatures), at most this many at once.
    static constexpr std::size_t kMaxPrefetches = 8;
    // How long a failed prefetch is the answer to the archive's next request
    // (rather than a second download that would fail alike).
    static constexpr std::chrono::seconds kPrefetchFailureLife{60};

    // `credentials`: the tokens archives on their registry's own origin are fetched with.
    RegistryAnswers(registry::RegistryService& registry, archives::ArchiveStore& archives,
                    credentials::TokenLifecycle& credentials, std::filesystem::path snapshot_dir)
        : registry_(registry),
          archives_(archives),
          credentials_(credentials),
          snapshots_(std::move(snapshot_dir)),
          platform_(proto::this_platform()) {}

    // The answer to `route` (a registry route's host normalized); a good
    // registry answer that holds only registry metadata and the listener's
    // own URLs is kept on disk. Throws proto::Error, cache::FetchFailure (a
    // registry's failure, kept on disk while fresh).
    boost::asio::awaitable<ListenerResponse> answer(const Route& route);

    // The last good answer to `route` kept on disk, if any.
    std::optional<ListenerResponse> kept(const Route& route) const;

  private:
    struct PendingArchive {
        std::string url;
        std::vector<std::string> published;
        bool verify = true;
        std::string what;
        // The host whose answer named it: its token goes with the download
        // to `token_origin`, and nowhere else.
        std::string token_host;
        std::string token_origin;
        // How the fleet tier names it; none for a mirror's archives.
        std::optional<archives::TierItem> tier_item;
    };

    // How the fleet tier names a provider route's package for `platform`
    // ("os_arch").
    static archives::TierItem provider_item(const Route& route, const std::string& platform,
                                            const std::string& filename);
    // `made_of`: the registry document the answer was made of; the answer
    // cache hands out the same object for as long as it holds it, and a new
    // one for each fetch (by an answer or by a prefetch).
    using Document = std::shared_ptr<const registry::RegistryDocument>;
    boost::asio::awaitable<ListenerResponse> registry_answer(const Route& route);
    boost::asio::awaitable<ListenerResponse> document_answer(const Route& route, Document& made_of);
    boost::asio::awaitable<ListenerResponse> module_download_answer(const Route& route,
                                                                    Document& made_of);
    boost::asio::awaitable<ListenerResponse> provider_answer(const Route& route, Document& made_of);
    boost::asio::awaitable<ListenerResponse> published_file_answer(const Route& route,
                                                                   const proto::Json& body,
                                                                   const std::string& what,
                                                                   Document& made_of);
    // Whether the answer kept on disk under `key` was last made of `made_of`,
    // so that an answer made of it needs no writing.
    bool kept_from(const DocumentSnapshots::Key& key, const Document& made_of) const;
    // `remembered`: the store key of the package it names, "" for none.
    ListenerResponse package_answer(const Route& route, const proto::Json& body,
                                    const std::string& what, std::string& remembered);
    boost::asio::awaitable<ListenerResponse> archive_answer(const Route& route);
    // The store's request for the archive remembered as `key`, its
    // download credentials read; nullopt when none is remembered.
    boost::asio::awaitable<std::optional<archives::ArchiveRequest>> pending_request(
        const std::string& key);
    // The archive remembered as `key` started downloading into the store,
    // unless it is there or kMaxPrefetches are starting: Terraform asks for
    // it next (docs/manual/registry-cache.md, "Prefetch").
    void prefetch(const boost::asio::any_io_executor& io, const std::string& key);
    // The SHA256SUMS and its signature that the package document `body`
    // names, fetched into the answer cache now: Terraform asks for them
    // next. At most kMaxPrefetches such fetches run at once.
    void prefetch_published(const boost::asio::any_io_executor& io, const std::string& host,
                            const proto::Json& body, const std::string& what);
    boost::asio::awaitable<void> fetching_published(std::string url, std::string label,
                                                    std::string host);
    // The package document of the version Terraform picks when nothing
    // pins another (the newest release in the versions document `body`),
    // for the platform it last asked for, fetched into the answer cache
    // with its SHA256SUMS and signature: Terraform asks every provider's
    // versions before the first package. Counted with the published files.
    void prefetch_likely_package(const boost::asio::any_io_executor& io, const Route& route,
                                 const proto::Json& body);
    boost::asio::awaitable<void> fetching_package(Route route, std::string version,
                                                  std::string platform);
    boost::asio::awaitable<void> prefetching(std::string key);
    // Until the prefetch of `key` starting now, if any, has started or failed.
    boost::asio::awaitable<void> prefetch_started(const std::string& key);
    void prefetch_failed(const std::string& key, const std::exception_ptr& error);
    boost::asio::awaitable<archives::DownloadCredentials> download_credentials(std::string host,
                                                                               std::string origin,
                                                                               std::string what);
    boost::asio::awaitable<ListenerResponse> mirror_answer(const Route& route);
    proto::Json mirror_version(const Route& route, const proto::Json& body,
                               const std::string& what);
    bool worth_keeping(const Route& route, const ListenerResponse& response) const;
    void remember(const std::string& key, PendingArchive pending);

    registry::RegistryService& registry_;
    archives::ArchiveStore& archives_;
    credentials::TokenLifecycle& credentials_;
    DocumentSnapshots snapshots_;
    // The document each answer kept on disk was last made of, by key stem.
    std::map<std::string, std::weak_ptr<const registry::RegistryDocument>> kept_from_;
    // Archives Terraform was pointed at, by store key: where to fetch them.
    std::map<std::string, PendingArchive> pending_;
    std::deque<std::string> pending_order_;  // its keys, oldest first
    std::size_t prefetches_ = 0;             // prefetching() coroutines running
    // fetching_published() and fetching_package() coroutines running
    std::size_t published_prefetches_ = 0;
    // The platform ("os_arch") of Terraform's last package request; this
    // machine's until then.
    std::string platform_;
    struct PrefetchFailure {
        std::exception_ptr error;
        std::chrono::steady_clock::time_point at;
    };
    // By store key: taken by the archive's next request, if fresh.
    std::map<std::string, PrefetchFailure> prefetch_failures_;
    // By store key, the prefetches starting: a timer that never expires,
    // cancelled when the prefetch has its first bytes or its failure. The
    // archive's request waits for it, so that it follows that download or
    // takes that failure rather than starting another.
    std::map<std::string, std::shared_ptr<boost::asio::steady_timer>> prefetches_starting_;
};

}  // namespace hostkeeper::daemon::registry_cache
