#include "daemon/registry_cache/tcp_peer.hpp"

#include <arpa/inet.h>

#include <cstdio>
#include <exception>
#include <vector>

#include "proto/file_io.hpp"

namespace hostkeeper::daemon::registry_cache {
namespace {

constexpr std::size_t kMaxTable = std::size_t{64} * 1024 * 1024;

// "0100007F:1F90": the address as the kernel prints it (its 32-bit value in
// host order), the port in host order.
std::string table_address(const boost::asio::ip::tcp::endpoint& endpoint) {
    const std::uint32_t network = htonl(endpoint.address().to_v4().to_uint());
    char text[16];
    std::snprintf(text, sizeof text, "%08X:%04X", network, endpoint.port());
    return text;
}

}  // namespace

std::optional<uid_t> peer_uid_in(std::string_view table,
                                 const boost::asio::ip::tcp::endpoint& local,
                                 const boost::asio::ip::tcp::endpoint& peer) {
    if (!local.address().is_v4() || !peer.address().is_v4()) return std::nullopt;
    const std::string client = table_address(peer);
    const std::string server = table_address(local);
    while (!table.empty()) {
        const auto end = table.find('\n');
        const std::string_view line = table.substr(0, end);
        table.remove_prefix(end == std::string_view::npos ? table.size() : end + 1);
        std::vector<std::string_view> fields;
        std::size_t at = 0;
        while (at < line.size() && fields.size() < 8) {
            const auto start = line.find_first_not_of(' ', at);
            if (start == std::string_view::npos) break;
            const auto stop = line.find(' ', start);
            fields.push_back(line.substr(start, stop - start));
            at = stop == std::string_view::npos ? line.size() : stop;
        }
        // sl local_address rem_address st tx:rx tr:when retrnsmt uid
        if (fields.size() < 8 || fields[1] != client || fields[2] != server) continue;
        try {
            return static_cast<uid_t>(std::stoul(std::string(fields[7])));
        } catch (const std::exception&) {
            return std::nullopt;
        }
    }
    return std::nullopt;
}

std::optional<uid_t> loopback_peer_uid(const boost::asio::ip::tcp::endpoint& local,
                                       const boost::asio::ip::tcp::endpoint& peer) {
    try {
        const std::optional<std::string> table =
            proto::read_file_if_exists("/proc/net/tcp", kMaxTable);
        if (!table) return std::nullopt;
        return peer_uid_in(*table, local, peer);
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

}  // namespace hostkeeper::daemon::registry_cache
