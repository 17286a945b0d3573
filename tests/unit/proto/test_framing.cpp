#include <catch2/catch.hpp>

#include "proto/error.hpp"
#include "proto/framing.hpp"

namespace test_framing {

using namespace hostkeeper::proto;

TEST_CASE("a frame is a big-endian length and the payload", "[proto][framing]") {
    const std::string frame = encode_frame("{}");
    REQUIRE(frame.size() == 6);
    CHECK(frame.substr(0, 4) == std::string("\0\0\0\x02", 4));
    CHECK(frame.substr(4) == "{}");

    const FrameHeader header = encode_header(0x0102);
    CHECK(header == FrameHeader{0x00, 0x00, 0x01, 0x02});
    CHECK(decode_header(header) == 0x0102);
}

TEST_CASE("frame sizes are bounded: none empty, none over 64 KiB", "[proto][framing]") {
    CHECK(decode_header(encode_header(kMaxFrameSize)) == kMaxFrameSize);
    CHECK_THROWS_MATCHES(
        encode_header(kMaxFrameSize + 1), Error,
        Catch::Predicate<Error>([](const Error& e) { return e.code() == ErrorCode::too_large; }));
    CHECK_THROWS_MATCHES(
        decode_header(FrameHeader{0, 1, 0, 1}), Error,
        Catch::Predicate<Error>([](const Error& e) { return e.code() == ErrorCode::too_large; }));
    CHECK_THROWS_MATCHES(
        decode_header(FrameHeader{0xff, 0xff, 0xff, 0xff}), Error,
        Catch::Predicate<Error>([](const Error& e) { return e.code() == ErrorCode::too_large; }));
    CHECK_THROWS_MATCHES(
        decode_header(FrameHeader{0, 0, 0, 0}), Error,
        Catch::Predicate<Error>([](const Error& e) { return e.code() == ErrorCode::bad_request; }));
    CHECK_THROWS_AS(encode_frame(std::string(kMaxFrameSize + 1, 'x')), Error);
}

}  // namespace test_framing
