#pragma once
// Protocol and product versions. See proto/PROTOCOL.md, "Versions".

namespace hostkeeper::proto {

// The protocol version this build speaks. Every request carries it as "v".
inline constexpr int kProtocolVersion = 1;

// The product version (CMake's project version), e.g. "0.1.0".
const char* product_version() noexcept;

}  // namespace hostkeeper::proto
