#include "daemon/fleet/fleet_tier.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <exception>
#include <string_view>
#include <utility>

#include "daemon/archives/package_hash.hpp"
#include "daemon/archives/verified_download.hpp"
#include "daemon/async/on_worker.hpp"
#include "daemon/fleet/oci_manifest.hpp"

namespace hostkeeper::daemon::fleet {
namespace asio = boost::asio;
using archives::TierItem;

namespace {

bool is_provider(const TierItem& item) {
    return item.kind == TierItem::Kind::provider;
}

std::string repository_of(const FleetAddress& fleet, const TierItem& item) {
    return is_provider(item)
               ? provider_repository(fleet, item.host, item.namespace_, item.name)
               : module_repository(fleet, item.host, item.namespace_, item.name, item.system);
}

std::string tag_of(const TierItem& item) {
    return is_provider(item) ? platform_tag(item.version, item.os, item.arch)
                             : version_tag(item.version);
}

constexpr std::string_view kOtherLayerType = "application/octet-stream";

// The layer type of the archive open as `fd`: OpenTofu's for a zip (by its
// first bytes: a module's download location need not name it), else plain
// bytes.
std::string layer_type(int fd) {
    std::array<char, 4> magic{};
    const bool zip = ::pread(fd, magic.data(), magic.size(), 0) == 4 &&
                     std::string_view(magic.data(), magic.size()) == std::string_view("PK\3\4", 4);
    return std::string(zip ? kZipLayerType : kOtherLayerType);
}

// The manifest's one archive layer: a provider's is a zip; a module's
// either type.
std::optional<Descriptor> archive_layer(const TierItem& item, const Manifest& manifest) {
    std::optional<Descriptor> layer = single_layer(manifest, kZipLayerType);
    if (!layer && !is_provider(item)) layer = single_layer(manifest, kOtherLayerType);
    return layer;
}

std::string what_of(const TierItem& item) {
    return (is_provider(item) ? "provider " : "module ") + item.host + "/" + item.namespace_ + "/" +
           item.name + (item.system.empty() ? "" : "/" + item.system) + " " + item.version +
           (item.os.empty() ? "" : " " + item.os + "_" + item.arch);
}

// The SHA-256 hex of the file open as `fd` (a job for a worker thread).
auto hash_job(int fd) {
    return [fd] { return archives::zip_hash("/proc/self/fd/" + std::to_string(fd)).substr(3); };
}

// The version's index as stored, when it reads as one; nullopt: a new one.
std::optional<Index> readable_index(const std::optional<OciManifestAnswer>& answer) {
    if (!answer) return std::nullopt;
    try {
        return read_index(answer->body);
    } catch (const ManifestError& e) {
        spdlog::warn("fleet tier: replacing an index that does not read: {}", e.what());
        return std::nullopt;
    }
}

}  // namespace

FleetTier::FleetTier(asio::any_io_executor io, http::HttpClient& http, FleetOptions options,
                     CredentialLookup credentials)
    : io_(std::move(io)),
      options_(std::move(options)),
      client_(http, options_.address, std::move(credentials)) {
    stats_.address = options_.address.text();
    stats_.push = options_.push;
    stats_.modules = options_.modules;
}

FleetTier::~FleetTier() {
    hashing_.join();
}

bool FleetTier::covers(const TierItem& item) const {
    return is_provider(item) || options_.modules;
}

FleetStats FleetTier::stats() const {
    return stats_;
}

proto::Json FleetTier::status() const {
    const FleetStats& s = stats_;
    return {{"address", s.address},
            {"push", s.push},
            {"modules", s.modules},
            {"hits", s.hits},
            {"misses", s.misses},
            {"pushes", s.pushes},
            {"present", s.present},
            {"refusals", s.refusals},
            {"failures", s.failures},
            {"dropped", s.dropped},
            {"in_flight", running_ + queue_.size()},
            {"bytes_in", s.bytes_in},
            {"bytes_out", s.bytes_out},
            {"problem", s.problem.empty() ? proto::Json(nullptr) : proto::Json(s.problem)}};
}

asio::awaitable<std::optional<std::uint64_t>> FleetTier::fetch(const TierItem& item,
                                                               const std::string& sha256, int fd) {
    if (!covers(item)) co_return std::nullopt;
    auto taking = take(item, sha256, fd);  // named first
    co_return co_await std::move(taking);
}

asio::awaitable<std::optional<std::uint64_t>> FleetTier::take(TierItem item, std::string sha256,
                                                              int fd) {
    try {
        const std::string repository = repository_of(options_.address, item);
        auto finding = wanted_layer(item, repository, sha256);  // named first
        const std::optional<Descriptor> layer = co_await std::move(finding);
        if (!layer) {
            ++stats_.misses;
            co_return std::nullopt;
        }
        auto getting = client_.blob_to(repository, layer->digest, fd,
                                       archives::kMaxPackageSize);  // named first
        const std::uint64_t size = co_await std::move(getting);
        ++stats_.hits;
        stats_.bytes_in += size;
        worked();
        co_return size;
    } catch (const OciError& e) {
        if (e.cause() == OciFailure::mismatch) ++stats_.refusals;
        failed(e.cause(), "taking " + what_of(item) + ": " + e.what());
    } catch (const ManifestError& e) {
        failed(OciFailure::protocol, "taking " + what_of(item) + ": its manifest: " + e.what());
    } catch (const FleetAddressError& e) {
        ++stats_.misses;  // a name the tier cannot hold: never stored there either
        spdlog::debug("fleet tier: {}: {}", what_of(item), e.what());
    }
    co_return std::nullopt;
}

asio::awaitable<std::optional<Descriptor>> FleetTier::wanted_layer(const TierItem& item,
                                                                   const std::string& repository,
                                                                   const std::string& sha256) {
    auto asking = client_.manifest(repository, tag_of(item));  // named first
    const std::optional<OciManifestAnswer> answer = co_await std::move(asking);
    if (!answer) co_return std::nullopt;
    co_return layer_for(item, answer->body, sha256);
}

std::optional<Descriptor> FleetTier::layer_for(const TierItem& item, const std::string& manifest,
                                               const std::string& sha256) {
    std::optional<Descriptor> layer = archive_layer(item, read_manifest(manifest));
    if (!layer) return std::nullopt;
    if (is_provider(item) && layer->digest != "sha256:" + sha256) return std::nullopt;
    if (!is_provider(item)) {
        const auto it = layer->annotations.find(std::string(kLocationAnnotation));
        if (it == layer->annotations.end() || it->second != item.location) return std::nullopt;
    }
    return layer;
}

void FleetTier::refused(const TierItem& item, const std::string& why) {
    ++stats_.refusals;
    failed(OciFailure::mismatch, why + " (" + what_of(item) + ")");
}

void FleetTier::offer(const TierItem& item, archives::OwnedFd file, std::uint64_t size,
                      std::string sha256) {
    if (!options_.push || !covers(item)) return;
    if (queue_.size() >= kMaxQueuedPushes) {
        ++stats_.dropped;
        return;
    }
    queue_.push_back(Push{item, std::move(file), size, std::move(sha256)});
    next_push();
}

void FleetTier::next_push() {
    while (running_ < kMaxPushes && !queue_.empty()) {
        Push push = std::move(queue_.front());
        queue_.pop_front();
        ++running_;
        asio::co_spawn(io_, run_push(std::move(push)), [this](const std::exception_ptr&) {
            --running_;
            next_push();
        });
    }
}

// A registry may stumble while another writer commits the same blob
// (distribution 2.8 answers a HEAD of it with 500, "invalid checksum digest
// format", and a manifest naming it with 400, "blob unknown", while it links
// the blob again): a write that failed other than by refused credentials or
// a full registry is tried again once, a moment later; blobs already there
// are not sent again.
asio::awaitable<void> FleetTier::run_push(Push push) {
    for (int attempt = 1;; ++attempt) {
        std::optional<std::pair<OciFailure, std::string>> failure;
        try {
            auto writing = write(push);  // named first
            co_await std::move(writing);
            co_return;
        } catch (const OciError& e) {
            failure.emplace(e.cause(), e.what());
        } catch (const std::exception& e) {
            failure.emplace(OciFailure::protocol, e.what());
        }
        if (attempt == 1 && failure->first != OciFailure::refused &&
            failure->first != OciFailure::full) {
            asio::steady_timer pause(io_, kPushRetryPause);
            co_await pause.async_wait(asio::use_awaitable);
            continue;
        }
        failed(failure->first, "writing " + what_of(push.item) + ": " + failure->second);
        co_return;
    }
}

asio::awaitable<void> FleetTier::write(Push& push) {
    const TierItem& item = push.item;
    const std::string repository = repository_of(options_.address, item);
    if (push.sha256.empty()) {
        auto hashing = async::on_worker(hashing_.get_executor(), hash_job(push.file.get()));
        push.sha256 = co_await std::move(hashing);
    }
    const std::string digest = "sha256:" + push.sha256;
    auto asking = client_.manifest(repository, tag_of(item));  // named first
    const std::optional<OciManifestAnswer> stored = co_await std::move(asking);
    if (stored && layer_for(item, stored->body, push.sha256)) {
        // There already; a provider's entry in its version's index too,
        // which a writer racing ours, or a failed index write, may have left out.
        if (is_provider(item)) {
            auto indexing = write_provider_index(item, repository, stored->body);  // named first
            co_await std::move(indexing);
        }
        ++stats_.present;
        co_return;
    }
    auto blob = client_.push_blob(repository, digest, push.file.get(), push.size);  // named first
    co_await std::move(blob);
    const Descriptor config = empty_config();
    auto configuring = client_.push_text_blob(repository, config.digest,
                                              std::string(kEmptyConfigBlob));  // named first
    co_await std::move(configuring);
    const Manifest manifest =
        is_provider(item)
            ? provider_manifest(digest, push.size, item.filename)
            : module_manifest(digest, push.size, layer_type(push.file.get()), item.location);
    const std::string text = write_manifest(manifest);
    auto putting = client_.put_manifest(repository, tag_of(item), std::string(kImageManifestType),
                                        text);  // named first
    co_await std::move(putting);
    if (is_provider(item)) {
        auto indexing = write_provider_index(item, repository, text);  // named first
        co_await std::move(indexing);
    }
    ++stats_.pushes;
    stats_.bytes_out += push.size;
    spdlog::info("fleet tier: wrote {} ({} bytes) to {}", what_of(item), push.size,
                 options_.address.text());
    worked();
}

asio::awaitable<void> FleetTier::write_provider_index(const TierItem& item,
                                                      const std::string& repository,
                                                      const std::string& manifest) {
    const std::string tag = version_tag(item.version);
    auto asking = client_.manifest(repository, tag);  // named first
    std::optional<Index> index = readable_index(co_await std::move(asking));
    Descriptor entry;
    entry.media_type = std::string(kImageManifestType);
    entry.digest = "sha256:" + archives::sha256_hex(manifest);
    entry.size = manifest.size();
    entry.artifact_type = std::string(kProviderTargetArtifact);
    const Platform platform{item.os, item.arch};
    if (index) {
        const std::optional<Descriptor> listed = platform_entry(*index, platform);
        if (listed && listed->digest == entry.digest) co_return;  // listed already
    }
    const Index next = provider_index(std::move(index), entry, platform);
    auto putting = client_.put_manifest(repository, tag, std::string(kImageIndexType),
                                        write_index(next));  // named first
    co_await std::move(putting);
}

std::string FleetTier::fix_for(OciFailure cause) {
    switch (cause) {
        case OciFailure::unreachable:
            return "archives come from upstream meanwhile; check that the fleet registry is up "
                   "and reachable from this machine";
        case OciFailure::refused:
            return "archives come from upstream meanwhile; give this machine credentials for "
                   "the fleet registry with pull (and push) permission: a Docker item in the "
                   "keyring (docker-credential-hostkeeper), a token_command with a token_username, "
                   "or DOCKER_CONFIG's auths or the credential helper it names";
        case OciFailure::full:
            return "archives are not written meanwhile; free space or raise the quota of the "
                   "fleet registry, or set registry_cache.fleet_push = false here";
        case OciFailure::mismatch:
            return "that archive came from upstream; remove the bad blob or tag from the fleet "
                   "registry, and check who may write to it";
        case OciFailure::protocol:
            return "archives come from upstream meanwhile; check that registry_cache.fleet names "
                   "an OCI Distribution registry";
    }
    return {};
}

void FleetTier::failed(OciFailure cause, const std::string& message) {
    if (cause != OciFailure::mismatch) ++stats_.failures;
    const std::string fix = fix_for(cause);
    stats_.problem = message + " (" + fix + ")";
    if (logged_.insert(cause).second)
        spdlog::warn("fleet tier {}: {} ({})", options_.address.text(), message, fix);
}

void FleetTier::worked() {
    if (stats_.problem.empty()) return;
    spdlog::info("fleet tier {}: works again", options_.address.text());
    stats_.problem.clear();
    logged_.clear();
}

}  // namespace hostkeeper::daemon::fleet
