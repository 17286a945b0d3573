#include "daemon/fleet/oci_client.hpp"

#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/archives/package_hash.hpp"
#include "daemon/fleet/auth_challenge.hpp"
#include "daemon/fleet/oci_manifest.hpp"
#include "daemon/fleet/registry_token.hpp"
#include "daemon/http/url.hpp"
#include "proto/printable.hpp"

namespace hostkeeper::daemon::fleet {
namespace asio = boost::asio;

namespace {

constexpr int kMaxBlobRedirects = 5;
constexpr std::size_t kMaxSmallAnswer = std::size_t{64} * 1024;

bool is_redirect(long status) {
    return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

std::string scope_of(const std::string& repository, bool push) {
    return "repository:" + repository + (push ? ":pull,push" : ":pull");
}

http::HttpRequest bounded(std::string url, std::string method, std::chrono::seconds timeout) {
    http::HttpRequest request;
    request.url = std::move(url);
    request.method = std::move(method);
    request.timeout = timeout;
    request.connect_timeout = kOciConnectTimeout;
    request.stall_timeout = kOciStallTimeout;
    request.max_body = kMaxSmallAnswer;
    return request;
}

// `text` cut to a line's worth, controls replaced (proto/printable.hpp), for a message.
std::string excerpt(std::string_view text) {
    return proto::printable(text.substr(0, 160));
}

}  // namespace

OciFailure oci_status_failure(long status) {
    if (status == 401 || status == 403) return OciFailure::refused;
    if (status == 413 || status == 507) return OciFailure::full;
    if (status >= 500) return OciFailure::unreachable;
    return OciFailure::protocol;
}

std::string oci_status_message(const std::string& what, long status) {
    std::string out = what + ": HTTP status " + std::to_string(status);
    switch (oci_status_failure(status)) {
        case OciFailure::refused:
            return out + " (the credentials were refused)";
        case OciFailure::full:
            return out + " (the registry is full or over its quota)";
        default:
            return out;
    }
}

OciClient::OciClient(http::HttpClient& http, FleetAddress fleet, CredentialLookup credentials)
    : http_(http), fleet_(std::move(fleet)), credentials_(std::move(credentials)) {}

std::string OciClient::url(const std::string& repository, const std::string& rest) const {
    return fleet_.origin() + "/v2/" + repository + "/" + rest;
}

void OciClient::with_credentials(http::HttpRequest& request, const std::string& scope) const {
    if (!http::same_origin(request.url, fleet_.origin())) return;
    if (const auto it = tokens_.find(scope);
        it != tokens_.end() && it->second.expires > std::chrono::steady_clock::now()) {
        request.bearer_token = it->second.value.clone();
    } else if (basic_ && user_password_) {
        request.basic_credentials = user_password_->clone();
    }
}

asio::awaitable<http::HttpResponse> OciClient::exchange(http::HttpRequest request) {
    const std::string where = request.method + " " + request.url;
    try {
        auto sending = http_.fetch(std::move(request));  // named first
        co_return co_await std::move(sending);
    } catch (const http::HttpError& e) {
        if (e.write_errno() != 0) throw;  // the caller's file, not the registry
        throw OciError(OciFailure::unreachable, where + ": " + e.what());
    }
}

asio::awaitable<http::HttpResponse> OciClient::send(const std::string& repository, bool push,
                                                    const MakeRequest& make) {
    const std::string scope = scope_of(repository, push);
    for (int attempt = 0;; ++attempt) {
        http::HttpRequest request = make();
        with_credentials(request, scope);
        auto sending = exchange(std::move(request));  // named first
        http::HttpResponse response = co_await std::move(sending);
        if (response.status != 401 || attempt > 0) co_return response;
        auto asking = authenticate(repository, push, response);  // named first
        if (!co_await std::move(asking)) co_return response;
    }
}

// What a 401 asked for, obtained: Basic (when there are credentials) or a
// token for the repository's scope. False when there is nothing to try.
asio::awaitable<bool> OciClient::authenticate(const std::string& repository, bool push,
                                              const http::HttpResponse& refusal) {
    std::vector<Challenge> challenges;
    try {
        challenges = parse_challenges(refusal.www_authenticate);
    } catch (const ChallengeError& e) {
        throw OciError(
            OciFailure::protocol,
            fleet_.host + " answered 401 with a WWW-Authenticate that does not read: " + e.what());
    }
    const std::optional<BearerChallenge> bearer = bearer_challenge(challenges);
    if (!bearer && !asks_basic(challenges)) co_return false;
    if (credentials_) {
        auto looking = credentials_();  // named first
        FleetCredentials found = co_await std::move(looking);
        user_password_ = std::move(found.user_password);
        why_none_ = std::move(found.why_none);
    }
    if (!bearer) {
        // Basic, with what the lookup gives now (send() tries it once).
        if (!user_password_)
            throw OciError(
                OciFailure::refused,
                why_none_.empty()
                    ? fleet_.host + " asks for credentials, and none are configured"
                    : fleet_.host + " asks for credentials, and there are none: " + why_none_);
        basic_ = true;
        co_return true;
    }
    if (!bearer->realm.starts_with("https://") &&
        !http::same_origin(bearer->realm, fleet_.origin()))
        throw OciError(OciFailure::protocol,
                       fleet_.host + "'s token service is not https: " + excerpt(bearer->realm));
    const std::string scope = scope_of(repository, push);
    http::FormFields fields;
    if (!bearer->service.empty()) fields.emplace_back("service", bearer->service);
    fields.emplace_back("scope", scope);
    http::HttpRequest request;
    try {
        request = bounded(http::with_query(bearer->realm, fields), "GET", kOciCallTimeout);
    } catch (const http::UrlError& e) {
        throw OciError(OciFailure::protocol, fleet_.host + "'s token service: " + e.what());
    }
    request.max_body = kMaxRegistryTokenAnswer;
    if (user_password_) request.basic_credentials = user_password_->clone();
    const std::string realm = request.url.substr(0, request.url.find('?'));
    auto sending = exchange(std::move(request));  // named first
    const http::HttpResponse answer = co_await std::move(sending);
    if (answer.status != 200) {
        std::string message = oci_status_message("the token service " + realm, answer.status);
        if (!user_password_ && !why_none_.empty())
            message += "; no credentials were sent: " + why_none_;
        throw OciError(oci_status_failure(answer.status), message);
    }
    try {
        RegistryToken token = parse_registry_token(answer.body);
        tokens_[scope] =
            Token{std::move(token.token), std::chrono::steady_clock::now() + token.expires_in};
    } catch (const RegistryTokenError& e) {
        throw OciError(OciFailure::protocol, "the token service " + realm + ": " + e.what());
    }
    co_return true;
}

asio::awaitable<std::optional<OciManifestAnswer>> OciClient::manifest(std::string repository,
                                                                      std::string reference) {
    const std::string at = url(repository, "manifests/" + reference);
    const MakeRequest make = [&at] {
        http::HttpRequest request = bounded(at, "GET", kOciCallTimeout);
        request.media_type = std::string(kImageManifestType) + ", " + std::string(kImageIndexType);
        request.max_body = kMaxManifestSize;
        return request;
    };
    auto sending = send(repository, false, make);  // named first
    http::HttpResponse response = co_await std::move(sending);
    if (response.status == 404) co_return std::nullopt;
    if (response.status != 200)
        throw OciError(oci_status_failure(response.status),
                       oci_status_message("GET " + at, response.status));
    co_return OciManifestAnswer{response.content_type, std::move(response.body)};
}

asio::awaitable<void> OciClient::put_manifest(std::string repository, std::string reference,
                                              std::string media_type, std::string body) {
    const std::string at = url(repository, "manifests/" + reference);
    const MakeRequest make = [&] {
        http::HttpRequest request = bounded(at, "PUT", kOciCallTimeout);
        request.media_type = media_type;
        request.body = body;
        return request;
    };
    auto sending = send(repository, true, make);  // named first
    const http::HttpResponse response = co_await std::move(sending);
    if (response.status != 201 && response.status != 200)
        throw OciError(oci_status_failure(response.status),
                       oci_status_message("PUT " + at, response.status));
}

asio::awaitable<bool> OciClient::has_blob(std::string repository, std::string digest) {
    const std::string at = url(repository, "blobs/" + digest);
    const MakeRequest make = [&at] { return bounded(at, "HEAD", kOciCallTimeout); };
    auto sending = send(repository, false, make);  // named first
    const http::HttpResponse response = co_await std::move(sending);
    if (response.status == 200) co_return true;
    if (response.status == 404) co_return false;
    throw OciError(oci_status_failure(response.status),
                   oci_status_message("HEAD " + at, response.status));
}

asio::awaitable<std::uint64_t> OciClient::blob_to(std::string repository, std::string digest,
                                                  int fd, std::uint64_t max_size) {
    std::string at = url(repository, "blobs/" + digest);
    std::shared_ptr<archives::StreamingSha256> sha;
    const MakeRequest make = [&] {
        sha = std::make_shared<archives::StreamingSha256>();
        http::HttpRequest request = bounded(at, "GET", kOciBlobTimeout);
        request.media_type = "*/*";
        request.body_fd = fd;
        request.max_body = max_size;
        request.on_body = [sha](std::string_view piece, std::optional<std::uint64_t>) {
            sha->update(piece);
        };
        return request;
    };
    auto sending = send(repository, false, make);  // named first
    http::HttpResponse response = co_await std::move(sending);
    // Storage elsewhere (a registry's S3 or CDN): followed without credentials.
    for (int redirects = 0; is_redirect(response.status) && redirects < kMaxBlobRedirects;
         ++redirects) {
        if (response.location.empty()) break;
        at = response.location;
        auto following = exchange(make());  // named first
        response = co_await std::move(following);
    }
    if (response.status != 200)
        throw OciError(oci_status_failure(response.status),
                       oci_status_message("GET " + at, response.status));
    const std::string got = "sha256:" + sha->finish_zh().substr(3);
    if (got != digest || sha->bytes() != response.body_size)
        throw OciError(OciFailure::mismatch,
                       "GET " + at + ": the blob's bytes are " + got + ", not " + digest);
    co_return response.body_size;
}

asio::awaitable<void> OciClient::push_blob(std::string repository, std::string digest, int fd,
                                           std::uint64_t size) {
    const FillBody fill = [fd, size](http::HttpRequest& request) {
        request.upload_fd = fd;
        request.upload_size = size;
    };
    auto uploading = upload(repository, digest, fill, kOciBlobTimeout);  // named first
    co_await std::move(uploading);
}

asio::awaitable<void> OciClient::push_text_blob(std::string repository, std::string digest,
                                                std::string text) {
    const FillBody fill = [&text](http::HttpRequest& request) {
        request.media_type = "application/octet-stream";
        request.body = text;
    };
    auto uploading = upload(repository, digest, fill, kOciCallTimeout);  // named first
    co_await std::move(uploading);
}

// A blob uploaded in one PUT (POST for an upload URL first), unless the
// registry has it already (HEAD).
asio::awaitable<void> OciClient::upload(const std::string& repository, const std::string& digest,
                                        const FillBody& fill, std::chrono::seconds timeout) {
    auto checking = has_blob(repository, digest);  // named first
    if (co_await std::move(checking)) co_return;
    const std::string start = url(repository, "blobs/uploads/");
    const MakeRequest post = [&start] { return bounded(start, "POST", kOciCallTimeout); };
    auto starting = send(repository, true, post);  // named first
    const http::HttpResponse started = co_await std::move(starting);
    if (started.status != 202 || started.location.empty())
        throw OciError(oci_status_failure(started.status),
                       oci_status_message("POST " + start, started.status));
    std::string at;
    try {
        at = http::with_query(started.location, {{"digest", digest}});
    } catch (const http::UrlError& e) {
        throw OciError(OciFailure::protocol, "POST " + start + ": its upload URL: " + e.what());
    }
    const MakeRequest put = [&] {
        http::HttpRequest request = bounded(at, "PUT", timeout);
        fill(request);
        return request;
    };
    auto putting = send(repository, true, put);  // named first
    const http::HttpResponse put_answer = co_await std::move(putting);
    if (put_answer.status != 201)
        throw OciError(oci_status_failure(put_answer.status),
                       oci_status_message("PUT " + start + "...", put_answer.status));
}

}  // namespace hostkeeper::daemon::fleet
