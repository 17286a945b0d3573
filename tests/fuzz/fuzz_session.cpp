// A connection's bytes as a stream of frames, read the way the daemon's
// server and dispatcher read requests (header, payload, the request's "op",
// "v" and "host", a store's credentials) and the way a client reads
// responses (check_response). An error ends the connection, as it does there.
#include <algorithm>

#include "fuzz_support.hpp"
#include "proto/error.hpp"
#include "proto/hostname.hpp"
#include "proto/messages.hpp"
#include "proto/secret.hpp"

using namespace hostkeeper;
using proto::Error;
using proto::ErrorCode;
using proto::Json;

namespace {

// The dispatcher's checks before it would touch the keyring or the network.
void read_request(Json& request) {
    const auto op_field = request.find("op");
    if (op_field == request.end() || !op_field->is_string())
        throw Error(ErrorCode::bad_request, "no op");
    const auto op = proto::op_from_string(op_field->get<std::string>());
    const auto version = request.find("v");
    if (version == request.end() || !version->is_number_integer())
        throw Error(ErrorCode::bad_request, "no v");
    (void)version->get<long long>();
    (void)version->dump();
    if (!op) throw Error(ErrorCode::unknown_op, "unknown op");
    const auto host = request.find("host");
    if (host != request.end()) {
        if (!host->is_string()) throw Error(ErrorCode::bad_request, "host");
        const std::string normalized =
            proto::normalize_hostname(host->get_ref<const std::string&>());
        fuzz::require(proto::normalize_hostname(normalized) == normalized,
                      "a normalized host normalizes again");
    }
    if (*op == proto::Op::store) {
        const auto credentials = request.find("credentials");
        if (credentials == request.end()) throw Error(ErrorCode::bad_request, "credentials");
        proto::validate_credentials(*credentials);
        std::string text = credentials->dump();
        const proto::ScrubGuard guard(text);
        // The daemon keeps this text and splices it into `get` responses.
        Json back = proto::parse_payload(text);
        fuzz::require(back.dump() == text, "stored credentials do not splice back as they were");
        proto::scrub(back);
    }
}

// One frame; false when the connection would be closed.
bool read_frame(std::string_view& stream, std::size_t limit, bool response) {
    if (stream.size() < proto::kHeaderSize) return false;
    proto::FrameHeader header{};
    std::copy_n(stream.begin(), proto::kHeaderSize, header.begin());
    stream.remove_prefix(proto::kHeaderSize);
    const std::size_t size = proto::decode_header(header, limit);
    if (stream.size() < size) return false;  // the peer went away mid-frame
    const std::string_view payload = stream.substr(0, size);
    stream.remove_prefix(size);
    Json message = proto::parse_payload(payload);
    const proto::ScrubGuard guard(message);
    if (response) {
        proto::check_response(message);
    } else {
        read_request(message);
    }
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    for (const bool response : {false, true}) {
        std::string_view stream = fuzz::text_of(data, size);
        const std::size_t limit = response ? proto::kMaxResponseFrameSize : proto::kMaxFrameSize;
        try {
            while (read_frame(stream, limit, response)) {
            }
        } catch (const Error& e) {
            // The daemon answers with the error before it closes; the client
            // reads the same error back.
            const std::string answer = proto::serialize(proto::make_error(e.code(), e.what()));
            try {
                proto::check_response(proto::parse_payload(answer));
                fuzz::require(false, "an error answer reads as ok");
            } catch (const Error& back) {
                fuzz::require(back.code() == e.code(), "an error answer's code does not read back");
            }
        }
    }
    return 0;
}
