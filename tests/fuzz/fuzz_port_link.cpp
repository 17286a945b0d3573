// The port link's lines (proto/port_link.hpp), as hostkeeper-portd reads a
// daemon's request and a daemon reads the service's reply: every accepted
// line is the one its writer makes, and an error reply of any message is one
// printable line of at most kMaxPortLine bytes that reads back as itself.
#include <string>

#include "fuzz_support.hpp"
#include "proto/port_link.hpp"

using namespace hostkeeper;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = fuzz::text_of(data, size);

    if (const auto verb = proto::parse_port_request(text)) {
        const std::string line = proto::port_request(*verb);
        fuzz::require(line.substr(0, line.size() - 1) == text,
                      "an accepted request is not what port_request writes");
    }

    const proto::PortReply reply = proto::parse_port_reply(text);
    if (reply.port) {
        fuzz::require(reply.error.empty(), "a reply with a port and an error");
        fuzz::require(*reply.port != 0, "port 0 accepted");
        const std::string line = proto::port_reply_ok(*reply.port);
        fuzz::require(line.substr(0, line.size() - 1) == text,
                      "an accepted ok reply is not what port_reply_ok writes");
    } else {
        fuzz::require(!reply.error.empty(), "a reply with neither port nor error");
    }

    const std::string error = proto::port_reply_error(text);
    fuzz::require(error.size() <= proto::kMaxPortLine, "an error reply longer than a line");
    fuzz::require(!error.empty() && error.back() == '\n' && error.find('\n') == error.size() - 1,
                  "an error reply is not exactly one line");
    for (const char c : error.substr(0, error.size() - 1)) {
        const auto u = static_cast<unsigned char>(c);
        fuzz::require(u >= 0x20 && u != 0x7f, "an error reply holds a control character");
    }
    const proto::PortReply back = proto::parse_port_reply(error.substr(0, error.size() - 1));
    fuzz::require(!back.port, "an error reply reads as ok");
    if (!text.empty()) {
        fuzz::require(back.error == error.substr(6, error.size() - 7),
                      "an error reply does not read back as its message");
    }
    return 0;
}
