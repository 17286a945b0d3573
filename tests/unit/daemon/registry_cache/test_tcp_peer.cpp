#include <catch2/catch.hpp>

#include "daemon/registry_cache/tcp_peer.hpp"

using boost::asio::ip::make_address_v4;
using boost::asio::ip::tcp;
using hostkeeper::daemon::registry_cache::peer_uid_in;

namespace {
// /proc/net/tcp as the kernel prints it: the listener on 127.0.0.1:41234
// (0xA112), our end of a connection from port 51000 (0xC738) and the
// client's end, owned by uid 1000; and another connection of uid 1001.
const char* const kTable =
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout "
    "inode\n"
    "   0: 0100007F:A112 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 "
    "111 1 0000000000000000 100 0 0 10 0\n"
    "   1: 0100007F:A112 0100007F:C738 01 00000000:00000000 00:00000000 00000000  1000        0 "
    "112 1 0000000000000000 20 4 30 10 -1\n"
    "   2: 0100007F:C738 0100007F:A112 01 00000000:00000000 00:00000000 00000000  1000        0 "
    "113 1 0000000000000000 20 4 30 10 -1\n"
    "   3: 0100007F:C739 0100007F:A112 01 00000000:00000000 00:00000000 00000000  1001        0 "
    "114 1 0000000000000000 20 4 30 10 -1\n";
}  // namespace

TEST_CASE("peer_uid_in finds the client's end of a loopback connection", "[registry_cache]") {
    const tcp::endpoint local(make_address_v4("127.0.0.1"), 41234);
    CHECK(peer_uid_in(kTable, local, tcp::endpoint(make_address_v4("127.0.0.1"), 51000)) == 1000u);
    CHECK(peer_uid_in(kTable, local, tcp::endpoint(make_address_v4("127.0.0.1"), 51001)) == 1001u);
    // Not in the table (closed), another address, another listener port: unknown.
    CHECK_FALSE(peer_uid_in(kTable, local, tcp::endpoint(make_address_v4("127.0.0.1"), 51002)));
    CHECK_FALSE(peer_uid_in(kTable, local, tcp::endpoint(make_address_v4("127.0.0.2"), 51000)));
    CHECK_FALSE(peer_uid_in(kTable, tcp::endpoint(make_address_v4("127.0.0.1"), 41235),
                            tcp::endpoint(make_address_v4("127.0.0.1"), 51000)));
    CHECK_FALSE(peer_uid_in("", local, tcp::endpoint(make_address_v4("127.0.0.1"), 51000)));
}
