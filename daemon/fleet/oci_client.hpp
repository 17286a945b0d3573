#pragma once
// The OCI Distribution API calls the fleet tier makes (manifests by tag,
// blobs by digest: HEAD, GET, a monolithic upload), each with the
// registry's authentication: anonymous first, then what its 401 asks for,
// Basic with the fleet's credentials or a Bearer token from its token
// service (scope `repository:NAME:pull` or `:pull,push`), kept per scope
// until it expires. The credentials go to the registry's origin and its
// token service only; a blob's redirect to storage elsewhere carries none.
//
// Every call is bounded (a connect within 1 s, a stall of 10 s, a whole
// exchange) and fails with OciError, whose cause says what to tell the user.

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

#include "daemon/fleet/fleet_address.hpp"
#include "daemon/http/http_client.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::daemon::fleet {

// Why a call failed, as far as the user can act on it.
enum class OciFailure {
    unreachable,  // no answer: down, slow, TLS
    refused,      // 401 or 403 after the authentication it asked for
    full,         // the registry cannot take more (507, 413, or a quota's 403 text)
    mismatch,     // bytes that are not what the digest says
    protocol,     // an answer that is not the API's
};

class OciError : public std::runtime_error {
  public:
    OciError(OciFailure cause, const std::string& message)
        : std::runtime_error(message), cause_(cause) {}
    OciFailure cause() const noexcept { return cause_; }

  private:
    OciFailure cause_;
};

inline constexpr std::chrono::milliseconds kOciConnectTimeout{1000};
inline constexpr std::chrono::seconds kOciStallTimeout{10};
inline constexpr std::chrono::seconds kOciCallTimeout{30};    // small calls
inline constexpr std::chrono::seconds kOciBlobTimeout{1800};  // a blob's GET or PUT

struct OciManifestAnswer {
    std::string media_type;
    std::string body;
};

// What the fleet's credentials lookup found: "USER:PASSWORD", or nothing
// (anonymous) and why, when a source was configured and failed ("": none is).
struct FleetCredentials {
    std::optional<proto::Secret> user_password;
    std::string why_none;
};

// Asked each time the registry refuses what was sent.
using CredentialLookup = std::function<boost::asio::awaitable<FleetCredentials>()>;

class OciClient {
  public:
    OciClient(http::HttpClient& http, FleetAddress fleet, CredentialLookup credentials);

    // The manifest or index tagged `reference`; nullopt when there is none.
    boost::asio::awaitable<std::optional<OciManifestAnswer>> manifest(std::string repository,
                                                                      std::string reference);
    boost::asio::awaitable<void> put_manifest(std::string repository, std::string reference,
                                              std::string media_type, std::string body);
    boost::asio::awaitable<bool> has_blob(std::string repository, std::string digest);
    // The blob `digest` written into `fd` (emptied first): its size. Its
    // SHA-256 is checked as it comes (OciFailure::mismatch); more than
    // `max_size` bytes are refused. Throws OciError, or http::HttpError for
    // a failed write to `fd`.
    boost::asio::awaitable<std::uint64_t> blob_to(std::string repository, std::string digest,
                                                  int fd, std::uint64_t max_size);
    // Uploads `size` bytes of `fd` (from its start) as blob `digest`,
    // unless the registry has it already.
    boost::asio::awaitable<void> push_blob(std::string repository, std::string digest, int fd,
                                           std::uint64_t size);
    // The same for a small blob held in memory (a config).
    boost::asio::awaitable<void> push_text_blob(std::string repository, std::string digest,
                                                std::string text);

    const FleetAddress& address() const noexcept { return fleet_; }

  private:
    using MakeRequest = std::function<http::HttpRequest()>;
    using FillBody = std::function<void(http::HttpRequest&)>;
    boost::asio::awaitable<void> upload(const std::string& repository, const std::string& digest,
                                        const FillBody& fill, std::chrono::seconds timeout);
    boost::asio::awaitable<http::HttpResponse> send(const std::string& repository, bool push,
                                                    const MakeRequest& make);
    boost::asio::awaitable<http::HttpResponse> exchange(http::HttpRequest request);
    boost::asio::awaitable<bool> authenticate(const std::string& repository, bool push,
                                              const http::HttpResponse& refusal);
    void with_credentials(http::HttpRequest& request, const std::string& scope) const;
    std::string url(const std::string& repository, const std::string& rest) const;

    http::HttpClient& http_;
    FleetAddress fleet_;
    CredentialLookup credentials_;
    std::optional<proto::Secret> user_password_;  // as last looked up
    std::string why_none_;                        // why the last lookup found none
    bool basic_ = false;                          // the registry asked for Basic
    struct Token {
        proto::Secret value;
        std::chrono::steady_clock::time_point expires;
    };
    std::map<std::string, Token> tokens_;  // by scope
};

// The message of a call answered with `status`, and what that status means.
std::string oci_status_message(const std::string& what, long status);
OciFailure oci_status_failure(long status);

}  // namespace hostkeeper::daemon::fleet
