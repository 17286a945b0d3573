// The port link's lines (proto/port_link.hpp), as hostkeeper-portd reads a
// daemon's request and a daemon reads the service's reply: every accepted
// line is the one its writer makes, an error reply of any message is one
// printable line of at most kMaxPortLine bytes that reads back as itself, and
// a reply naming a registration's holder reads back its pid and socket.
#include <string>

#include "fuzz_support.hpp"
#include "proto/port_link.hpp"

using namespace hostkeeper;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = fuzz::text_of(data, size);

    if (const auto request = proto::parse_port_request(text)) {
        const std::string line = proto::port_request(request->verb, request->socket);
        fuzz::require(line.substr(0, line.size() - 1) == text,
                      "an accepted request is not what port_request writes");
        fuzz::require(line.size() <= proto::kMaxPortLine, "an accepted request is over a line");
        fuzz::require(request->socket.empty() || proto::nameable_socket(request->socket),
                      "a request names a socket that cannot be named");
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

    if (reply.holder) {
        fuzz::require(!reply.port, "a reply with a port and a holder");
        fuzz::require(reply.holder->pid > 0, "a holder with no pid");
        const std::string line = proto::port_reply_held(*reply.holder);
        fuzz::require(line.substr(0, line.size() - 1) == text,
                      "an accepted holder reply is not what port_reply_held writes");
    }
    // Any socket and pid: the reply naming them is one line that names them back.
    const proto::PortHolder named{static_cast<pid_t>(size + 1), std::string(text)};
    const std::string held = proto::port_reply_held(named);
    fuzz::require(held.size() <= proto::kMaxPortLine, "a holder reply longer than a line");
    const proto::PortReply held_back = proto::parse_port_reply(held.substr(0, held.size() - 1));
    fuzz::require(held_back.holder && held_back.holder->pid == named.pid,
                  "a holder reply does not read back its pid");
    fuzz::require(held_back.holder->socket ==
                      (proto::nameable_socket(text) ? std::string(text) : std::string()),
                  "a holder reply does not read back its socket");

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
