#include "daemon/archives/verified_download.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string_view>
#include <utility>

#include "daemon/archives/package_hash.hpp"
#include "daemon/async/on_worker.hpp"
#include "daemon/http/http_fetch.hpp"
#include "daemon/http/url.hpp"
#include "proto/error.hpp"
#include "proto/secret.hpp"
#include "proto/text_rules.hpp"

namespace hostkeeper::daemon::archives {
namespace asio = boost::asio;
using proto::Error;
using proto::ErrorCode;

namespace {

// The message of a download whose final response at `url` was `status`.
std::string failure_status(const std::string& what, const std::string& url, long status,
                           const DownloadCredentials& credentials) {
    std::string out =
        "downloading " + what + ": " + url + ": HTTP status " + std::to_string(status);
    // A refusal by the registry's own origin, or one after the token was
    // withheld from another: say what went with it.
    const bool refused = status == 401 || status == 403;
    if (refused && !credentials.host.empty() &&
        (credentials.token || http::same_origin(url, credentials.origin))) {
        out += http::refusal_reason(
            http::token_use(credentials.token.has_value(), credentials.keyring_problem, url,
                            credentials.origin),
            credentials.host, credentials.origin, credentials.keyring_problem);
    }
    return out;
}

// `on_body`, told each piece after `sha` has hashed it.
http::BodyObserver hashing_observer(std::shared_ptr<StreamingSha256> sha,
                                    http::BodyObserver on_body) {
    return [sha = std::move(sha), on_body = std::move(on_body)](
               std::string_view piece, std::optional<std::uint64_t> announced) {
        sha->update(piece);
        on_body(piece, announced);
    };
}

}  // namespace

DownloadCredentials::DownloadCredentials(const DownloadCredentials& other)
    : host(other.host),
      origin(other.origin),
      token(other.token ? std::optional<proto::Secret>(other.token->clone()) : std::nullopt),
      keyring_problem(other.keyring_problem) {}

DownloadCredentials& DownloadCredentials::operator=(const DownloadCredentials& other) {
    if (this != &other) *this = DownloadCredentials(other);
    return *this;
}

ExpectedHashes ExpectedHashes::from(const std::vector<std::string>& published,
                                    const std::string& what) {
    ExpectedHashes out;
    for (const std::string& hash : published) {
        if (hash.rfind("zh:", 0) == 0) out.zh.push_back(proto::ascii_lowercase(hash));
        if (hash.rfind("h1:", 0) == 0) out.h1.push_back(hash);
    }
    if (out.zh.empty() && out.h1.empty()) {
        throw Error(ErrorCode::verification_failed,
                    what +
                        ": its publisher gave no zh: or h1: hash to check the package against; not "
                        "downloading it");
    }
    return out;
}

DownloadedFile verify_package(const std::string& path, const ExpectedHashes& expected,
                              const std::string& refusing, const std::string& zh) {
    DownloadedFile out;
    const auto check = [&](const std::string& computed, const std::vector<std::string>& listed,
                           const char* kind) {
        if (listed.empty()) return;
        if (std::find(listed.begin(), listed.end(), computed) == listed.end()) {
            std::string list;
            for (const std::string& e : listed) list += (list.empty() ? "" : ", ") + e;
            throw Error(ErrorCode::verification_failed, refusing + ": its " + kind + " hash is " +
                                                            computed + ", but the publisher gave " +
                                                            list);
        }
        out.matched.push_back(computed);
    };
    try {
        out.zh = zh.empty() ? zip_hash(path) : zh;
        check(out.zh, expected.zh, "zh: (SHA-256 of the zip)");
        out.h1 = h1_hash(path);
        check(out.h1, expected.h1, "h1: (of its contents)");
    } catch (const PackageError& e) {
        throw Error(ErrorCode::verification_failed, refusing + ": " + e.what());
    }
    return out;
}

asio::awaitable<DownloadedFile> download_verified(
    http::HttpClient& http, asio::any_io_executor hashing, int fd, std::string path,
    std::string url, DownloadCredentials credentials, std::optional<ExpectedHashes> expected,
    std::string what, std::chrono::seconds timeout, http::BodyObserver on_body) {
    http::FetchRules rules;
    rules.max_body = kMaxPackageSize;
    rules.max_redirects = kMaxDownloadRedirects;
    rules.timeout = timeout;
    rules.body_fd = fd;
    std::shared_ptr<StreamingSha256> streamed;
    if (on_body) {
        streamed = std::make_shared<StreamingSha256>();
        rules.on_body = hashing_observer(streamed, std::move(on_body));
    }
    // Named first.
    auto fetching = http::fetch_following(http, url, credentials.token, credentials.origin, rules);
    const http::FetchResult result = co_await std::move(fetching);
    if (!result.response) {
        // The download could not be written into the file (a full disk: ENOSPC, EDQUOT).
        if (result.write_errno != 0)
            throw StoreUnwritable("downloading " + what + ": " + result.error, result.write_errno);
        throw Error(ErrorCode::registry_failed, "downloading " + what + ": " + result.error);
    }
    if (result.response->status != 200) {
        throw Error(
            ErrorCode::registry_failed,
            failure_status(what, result.response->url, result.response->status, credentials));
    }
    DownloadedFile out;
    if (expected) {
        // Hashing unpacks the archive: off the event loop, which keeps serving.
        const std::string refusing = "refusing " + what + " from " + url;
        // The pieces hashed as they came are the file's zh: when they add up to it.
        std::string zh;
        if (streamed && streamed->bytes() == result.response->body_size) zh = streamed->finish_zh();
        auto check = [&path, &expected, &refusing, &zh] {
            return verify_package(path, *expected, refusing, zh);
        };
        // Named first.
        auto hashed = async::on_worker(hashing, std::move(check));
        out = co_await std::move(hashed);
    }
    out.size = result.response->body_size;
    if (expected) {
        spdlog::info("fetched {} ({} bytes), verified {}", what, out.size,
                     out.matched.size() == 2 ? "zh: and h1:" : out.matched.front());
    } else {
        spdlog::info("fetched {} ({} bytes), nothing published to verify it against", what,
                     out.size);
    }
    co_return out;
}

}  // namespace hostkeeper::daemon::archives
