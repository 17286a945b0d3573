#include "proto/framing.hpp"

#include "proto/error.hpp"

namespace hostkeeper::proto {
namespace {

void check_size(std::size_t size, std::size_t limit) {
    if (size == 0) throw Error(ErrorCode::bad_request, "empty frame");
    if (size > limit) {
        throw Error(ErrorCode::too_large, "frame of " + std::to_string(size) +
                                              " bytes is over the limit of " +
                                              std::to_string(limit));
    }
}

}  // namespace

FrameHeader encode_header(std::size_t payload_size, std::size_t limit) {
    check_size(payload_size, limit);
    const auto n = static_cast<std::uint32_t>(payload_size);
    return {static_cast<unsigned char>(n >> 24U), static_cast<unsigned char>(n >> 16U),
            static_cast<unsigned char>(n >> 8U), static_cast<unsigned char>(n)};
}

std::size_t decode_header(const FrameHeader& header, std::size_t limit) {
    const std::uint32_t n = (std::uint32_t{header[0]} << 24U) | (std::uint32_t{header[1]} << 16U) |
                            (std::uint32_t{header[2]} << 8U) | std::uint32_t{header[3]};
    check_size(n, limit);
    return n;
}

std::string encode_frame(std::string_view payload, std::size_t limit) {
    const FrameHeader header = encode_header(payload.size(), limit);
    std::string frame;
    frame.reserve(kHeaderSize + payload.size());
    frame.append(header.begin(), header.end());
    frame.append(payload);
    return frame;
}

}  // namespace hostkeeper::proto
