// One frame's payload as the daemon and the clients read it: parse_payload,
// then the checks made of requests and responses, and a credentials object as
// a helper's `store` receives it on stdin (parse_credentials). What is
// accepted must serialize and parse back equal.
#include "fuzz_support.hpp"
#include "proto/error.hpp"
#include "proto/messages.hpp"
#include "proto/secret.hpp"

using namespace hostkeeper;
using proto::Json;

namespace {

void round_trip(const Json& message) {
    try {
        // Idempotent rather than equal: JSON numbers past a double's range
        // parse as infinity, which nlohmann/json writes as null.
        const std::string text = proto::serialize(message, proto::kMaxResponseFrameSize);
        const std::string again =
            proto::serialize(proto::parse_payload(text), proto::kMaxResponseFrameSize);
        fuzz::require(again == text,
                      "a serialized message does not serialize the same once parsed back");
    } catch (const proto::Error& e) {
        fuzz::require(e.code() == proto::ErrorCode::too_large,
                      "serialize failed other than too_large");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = fuzz::text_of(data, size);
    try {
        Json message = proto::parse_payload(text);
        fuzz::require(message.is_object(), "parse_payload accepted a non-object");
        round_trip(message);
        const auto op = message.find("op");
        if (op != message.end() && op->is_string()) {
            if (const auto known = proto::op_from_string(op->get<std::string>())) {
                fuzz::require(proto::to_string(*known) == op->get<std::string>(),
                              "op names do not round-trip");
            }
        }
        try {
            proto::check_response(message);
        } catch (const proto::Error&) {
        }
        proto::scrub(message);
    } catch (const proto::Error& e) {
        fuzz::require(e.code() == proto::ErrorCode::bad_request,
                      "parse_payload threw other than bad_request");
    }
    try {
        Json credentials = proto::parse_credentials(text);
        proto::validate_credentials(credentials);
        fuzz::require(credentials.dump().size() <= proto::kMaxCredentialsSize,
                      "credentials over the limit accepted");
        round_trip(credentials);
        proto::scrub(credentials);
    } catch (const proto::Error& e) {
        fuzz::require(
            e.code() == proto::ErrorCode::bad_request || e.code() == proto::ErrorCode::too_large,
            "parse_credentials threw an unexpected code");
    }
    return 0;
}
