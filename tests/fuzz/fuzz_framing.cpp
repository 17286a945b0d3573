// Frame headers: the 4-byte big-endian length every frame starts with, read
// by the daemon (requests, limit kMaxFrameSize) and by clients (responses,
// kMaxResponseFrameSize). A header accepted must encode back to itself.
#include <algorithm>

#include "fuzz_support.hpp"
#include "proto/error.hpp"
#include "proto/framing.hpp"

using namespace hostkeeper;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < proto::kHeaderSize) return 0;
    proto::FrameHeader header{};
    std::copy_n(data, proto::kHeaderSize, header.begin());
    for (const std::size_t limit : {proto::kMaxFrameSize, proto::kMaxResponseFrameSize}) {
        try {
            const std::size_t n = proto::decode_header(header, limit);
            fuzz::require(n > 0 && n <= limit, "decode_header returned a size outside (0, limit]");
            fuzz::require(proto::encode_header(n, limit) == header,
                          "a decoded header does not encode back");
        } catch (const proto::Error& e) {
            fuzz::require(e.code() == proto::ErrorCode::bad_request ||
                              e.code() == proto::ErrorCode::too_large,
                          "decode_header threw an unexpected error code");
        }
    }
    // The rest as a payload: encode_frame then decode_header give its size back.
    const std::string_view payload =
        fuzz::text_of(data + proto::kHeaderSize, size - proto::kHeaderSize);
    if (payload.empty()) return 0;
    const std::string frame = proto::encode_frame(payload);
    proto::FrameHeader back{};
    std::copy_n(frame.begin(), proto::kHeaderSize, back.begin());
    fuzz::require(proto::decode_header(back) == payload.size(),
                  "encode_frame's header is not the payload size");
    fuzz::require(std::string_view(frame).substr(proto::kHeaderSize) == payload,
                  "encode_frame changed the payload");
    return 0;
}
