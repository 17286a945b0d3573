#include "daemon/credentials/bearer_check.hpp"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <array>

namespace hostkeeper::daemon::credentials {

namespace {

bool equal_secret(std::string_view a, std::string_view b) {
    std::array<unsigned char, SHA256_DIGEST_LENGTH> da{};
    std::array<unsigned char, SHA256_DIGEST_LENGTH> db{};
    SHA256(reinterpret_cast<const unsigned char*>(a.data()), a.size(),  // NOLINT: OpenSSL's API
           da.data());
    SHA256(reinterpret_cast<const unsigned char*>(b.data()), b.size(),  // NOLINT: OpenSSL's API
           db.data());
    return CRYPTO_memcmp(da.data(), db.data(), da.size()) == 0;
}

}  // namespace

bool is_bearer_of(std::string_view authorization, const proto::Secret& token) {
    std::string expected = "Bearer ";
    expected.append(token.view());
    const bool ok = equal_secret(authorization, expected);
    proto::scrub(expected);
    return ok;
}

}  // namespace hostkeeper::daemon::credentials
