#pragma once
// Framing over a SOCK_STREAM Unix socket: a 4-byte big-endian unsigned length
// followed by that many bytes of UTF-8 JSON. See proto/PROTOCOL.md, "Framing".

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

namespace hostkeeper::proto {

inline constexpr std::size_t kHeaderSize = 4;
// The largest request payload a client may send (the header is not counted).
inline constexpr std::size_t kMaxFrameSize = std::size_t{64} * 1024;
// The largest response payload the daemon sends: registry answers (a
// provider's versions with their platforms) can be far larger than requests.
inline constexpr std::size_t kMaxResponseFrameSize = std::size_t{16} * 1024 * 1024;

using FrameHeader = std::array<unsigned char, kHeaderSize>;

// Throws Error{too_large} when `payload_size` exceeds `limit` and
// Error{bad_request} when it is zero.
FrameHeader encode_header(std::size_t payload_size, std::size_t limit = kMaxFrameSize);
// The payload length announced by a header. Throws as encode_header does, so
// a reader can refuse an oversized frame before reading its body.
std::size_t decode_header(const FrameHeader& header, std::size_t limit = kMaxFrameSize);
// Header and payload in one buffer.
std::string encode_frame(std::string_view payload, std::size_t limit = kMaxFrameSize);

}  // namespace hostkeeper::proto
