#include "daemon/credentials/credential_service.hpp"

#include <functional>

namespace hostkeeper::daemon::credentials {
namespace asio = boost::asio;

CredentialService::CredentialService(asio::any_io_executor io, asio::any_io_executor worker,
                                     Keyring& keyring, const CredentialCacheOptions& options,
                                     Clock clock, WallClock wall_clock)
    : clock_(std::move(clock)),
      cache_(io, std::move(worker), keyring, options, clock_),
      lifecycle_(std::move(io), cache_, clock_, std::move(wall_clock)) {
    cache_.check_reads(std::bind_front(&TokenLifecycle::keyring_read, &lifecycle_));
}

CredentialStats CredentialService::stats() const {
    CredentialStats s;
    static_cast<CacheStats&>(s) = cache_.stats();
    static_cast<LifecycleStats&>(s) = lifecycle_.stats();
    s.now = clock_();
    return s;
}

}  // namespace hostkeeper::daemon::credentials
