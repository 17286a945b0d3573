// The kernel's sock_diag answers as hostkeeper-portd reads them
// (proto/sock_diag.hpp): any bytes at all, unaligned, must be read
// without a read outside them, and only an answer about the very socket
// asked for, in a state with an owner, may name a uid.
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <sys/socket.h>

#include <cstring>
#include <vector>

#include "fuzz_support.hpp"
#include "proto/sock_diag.hpp"

using namespace hostkeeper;
using proto::DiagQuery;
using proto::PeerVerdict;

namespace {

// The query: from the input's first bytes when there are enough, else a
// fixed loopback one.
constexpr std::size_t kQueryBytes = 1 + 16 + 2 + 16 + 2 + 4;

DiagQuery query_of(const std::uint8_t* data, std::size_t size) {
    DiagQuery query;
    query.client = {127, 0, 0, 1};
    query.server = {127, 0, 0, 1};
    query.client_port = 40000;
    query.server_port = 585;
    query.sequence = 1;
    if (size < kQueryBytes) return query;
    query.family = (data[0] & 1) != 0 ? AF_INET6 : AF_INET;
    std::memcpy(query.client.data(), data + 1, 16);
    std::memcpy(&query.client_port, data + 17, 2);
    std::memcpy(query.server.data(), data + 19, 16);
    std::memcpy(&query.server_port, data + 35, 2);
    std::memcpy(&query.sequence, data + 37, 4);
    if (query.family == AF_INET) {
        std::memset(query.client.data() + 4, 0, 12);
        std::memset(query.server.data() + 4, 0, 12);
    }
    return query;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    // The bytes exactly as given (a copy of their own, so that ASan sees any
    // read past the end), read with a fixed query and with one from the input.
    const std::vector<std::uint8_t> bytes(data, data + size);
    const DiagQuery fixed = query_of(nullptr, 0);
    const auto first = proto::parse_peer_reply(bytes.data(), bytes.size(), fixed);
    const auto again = proto::parse_peer_reply(bytes.data(), bytes.size(), fixed);
    fuzz::require(first.verdict == again.verdict && first.uid == again.uid,
                  "parse_peer_reply is not a function of its input");
    fuzz::require(!proto::describe(first.verdict).empty(), "a verdict without words");

    const DiagQuery query = query_of(data, size);
    const std::size_t skip = size >= kQueryBytes ? kQueryBytes : 0;
    const std::vector<std::uint8_t> reply(data + skip, data + size);
    const auto read = proto::parse_peer_reply(reply.data(), reply.size(), query);
    if (read.verdict == PeerVerdict::found) {
        fuzz::require(reply.size() >= sizeof(nlmsghdr) + sizeof(inet_diag_msg),
                      "an owner found in fewer bytes than one answer");
    }

    // The request for the query is one well-formed netlink message, and the
    // kernel's answer built for it names its owner.
    const std::vector<std::uint8_t> request = proto::diag_request(query);
    nlmsghdr header{};
    std::memcpy(&header, request.data(), sizeof header);
    fuzz::require(header.nlmsg_len == request.size() && header.nlmsg_flags == NLM_F_REQUEST,
                  "the request is not one exact lookup");
    inet_diag_msg msg{};
    msg.idiag_family = static_cast<std::uint8_t>(query.family);
    msg.idiag_state = 1;  // ESTABLISHED
    inet_diag_req_v2 asked{};
    std::memcpy(&asked, request.data() + sizeof header, sizeof asked);
    msg.id = asked.id;
    msg.idiag_uid = 4242;
    nlmsghdr answer_header{};
    answer_header.nlmsg_len = static_cast<std::uint32_t>(sizeof answer_header + sizeof msg);
    answer_header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    answer_header.nlmsg_seq = query.sequence;
    std::vector<std::uint8_t> answer(answer_header.nlmsg_len);
    std::memcpy(answer.data(), &answer_header, sizeof answer_header);
    std::memcpy(answer.data() + sizeof answer_header, &msg, sizeof msg);
    const auto own = proto::parse_peer_reply(answer.data(), answer.size(), query);
    fuzz::require(own.verdict == PeerVerdict::found && own.uid == 4242,
                  "the answer to our own request is not read back");
    return 0;
}
