#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <string>

#include "proto/port_link.hpp"
#include "proto/unique_fd.hpp"

namespace test_port_link {

using namespace hostkeeper::proto;

TEST_CASE("port requests: the two verbs and nothing else", "[proto][port_link]") {
    CHECK(port_request(PortVerb::register_user) == "hostkeeper-port 1 register\n");
    CHECK(port_request(PortVerb::probe) == "hostkeeper-port 1 probe\n");
    const auto registered = parse_port_request("hostkeeper-port 1 register");
    REQUIRE(registered);
    CHECK(registered->verb == PortVerb::register_user);
    CHECK(registered->socket.empty());
    const auto probe = parse_port_request("hostkeeper-port 1 probe");
    REQUIRE(probe);
    CHECK(probe->verb == PortVerb::probe);
    // Parsed without its newline; any other spelling is refused.
    CHECK_FALSE(parse_port_request("hostkeeper-port 1 register\n"));
    CHECK_FALSE(parse_port_request("hostkeeper-port 2 register"));
    CHECK_FALSE(parse_port_request("hostkeeper-port 1 Register"));
    CHECK_FALSE(parse_port_request("hostkeeper-port 1 register "));
    CHECK_FALSE(parse_port_request("hostkeeper-port 1 "));
    CHECK_FALSE(parse_port_request("hostkeeper-port"));
    CHECK_FALSE(parse_port_request(""));
    CHECK_FALSE(parse_port_request(std::string("hostkeeper-port 1 probe\0", 24)));
}

TEST_CASE("a registration may name the daemon's socket", "[proto][port_link]") {
    const std::string socket = "/run/user/1000/hostkeeper/socket";
    const std::string line = port_request(PortVerb::register_user, socket);
    CHECK(line == "hostkeeper-port 1 register socket=/run/user/1000/hostkeeper/socket\n");
    const auto parsed = parse_port_request(line.substr(0, line.size() - 1));
    REQUIRE(parsed);
    CHECK(parsed->verb == PortVerb::register_user);
    CHECK(parsed->socket == socket);
    // Blanks are part of the path, which runs to the end of the line.
    const auto blank = parse_port_request("hostkeeper-port 1 register socket=/tmp/a b/socket");
    REQUIRE(blank);
    CHECK(blank->socket == "/tmp/a b/socket");
    // A probe names none; a socket that cannot be named is left out.
    CHECK(port_request(PortVerb::probe, socket) == "hostkeeper-port 1 probe\n");
    CHECK(port_request(PortVerb::register_user, "relative/socket") ==
          "hostkeeper-port 1 register\n");
    CHECK(port_request(PortVerb::register_user, "/a\nb") == "hostkeeper-port 1 register\n");
    const std::string longest = "/" + std::string(kMaxLinkSocket - 1, 's');
    CHECK(port_request(PortVerb::register_user, longest).size() <= kMaxPortLine);
    CHECK(port_request(PortVerb::register_user, longest + "s") == "hostkeeper-port 1 register\n");
    for (const char* bad :
         {"hostkeeper-port 1 register socket=", "hostkeeper-port 1 register socket=x",
          "hostkeeper-port 1 register sock=/x", "hostkeeper-port 1 registersocket=/x",
          "hostkeeper-port 1 probe socket=/x", "hostkeeper-port 1 register socket=/a\tb"}) {
        INFO(bad);
        CHECK_FALSE(parse_port_request(bad));
    }
    CHECK_FALSE(parse_port_request("hostkeeper-port 1 register socket=" + longest + "s"));
    CHECK(kNotARequest == "not a hostkeeper-port 1 request");
}

TEST_CASE("a second daemon's registration is told who holds it", "[proto][port_link]") {
    const PortHolder holder{4242, "/run/user/1000/hostkeeper/socket"};
    const std::string line = port_reply_held(holder);
    CHECK(line ==
          "error another hostkeeperd of this user holds the registry port: pid 4242, socket "
          "/run/user/1000/hostkeeper/socket\n");
    const PortReply reply = parse_port_reply(line.substr(0, line.size() - 1));
    CHECK_FALSE(reply.port);
    REQUIRE(reply.holder);
    CHECK(*reply.holder == holder);
    CHECK(reply.error == line.substr(6, line.size() - 7));
    // A holder that named no socket.
    const std::string bare = port_reply_held(PortHolder{7, ""});
    CHECK(bare == "error another hostkeeperd of this user holds the registry port: pid 7\n");
    const PortReply bare_reply = parse_port_reply(bare.substr(0, bare.size() - 1));
    REQUIRE(bare_reply.holder);
    CHECK(bare_reply.holder->pid == 7);
    CHECK(bare_reply.holder->socket.empty());
    // The longest nameable socket still fits the line.
    const std::string longest = "/" + std::string(kMaxLinkSocket - 1, 's');
    const std::string long_line = port_reply_held(PortHolder{2147483647, longest});
    CHECK(long_line.size() <= kMaxPortLine);
    const PortReply long_reply = parse_port_reply(long_line.substr(0, long_line.size() - 1));
    REQUIRE(long_reply.holder);
    CHECK(long_reply.holder->socket == longest);
    // A socket name the filter would change is not named at all.
    CHECK_FALSE(nameable_socket("/run/\x9b[2J"));
    CHECK_FALSE(nameable_socket("/run/\xc2\x9b"));
    CHECK(nameable_socket("/run/user/1000/h\xc3\xa9/socket"));
    CHECK(port_reply_held(PortHolder{9, "/\x9b"}) ==
          "error another hostkeeperd of this user holds the registry port: pid 9\n");
    // Other errors name no holder.
    CHECK_FALSE(parse_port_reply("error too many daemons are registered").holder);
    for (const char* bad :
         {"error another hostkeeperd of this user holds the registry port: pid ",
          "error another hostkeeperd of this user holds the registry port: pid 0",
          "error another hostkeeperd of this user holds the registry port: pid 012",
          "error another hostkeeperd of this user holds the registry port: pid 12x",
          "error another hostkeeperd of this user holds the registry port: pid 12, socket rel",
          "error another hostkeeperd of this user holds the registry port: pid 99999999999",
          // A socket the printable filter would change: the writer could not
          // have named it, so it names no holder.
          "error another hostkeeperd of this user holds the registry port: pid 12, socket /\x9b",
          "error another hostkeeperd of this user holds the registry port: pid 12, socket "
          "/\xc2\x9b"}) {
        INFO(bad);
        const PortReply odd = parse_port_reply(bad);
        CHECK_FALSE(odd.holder);
        CHECK_FALSE(odd.error.empty());
    }
}

TEST_CASE("port replies: ok PORT or error MESSAGE", "[proto][port_link]") {
    CHECK(port_reply_ok(585) == "ok 585\n");
    const PortReply ok = parse_port_reply("ok 585");
    REQUIRE(ok.port);
    CHECK(*ok.port == 585);
    CHECK(parse_port_reply("ok 65535").port == 65535);
    for (const char* bad :
         {"ok 0", "ok 65536", "ok 0585", "ok -1", "ok 585 ", "ok ", "ok", "OK 585", "ok 5a", ""}) {
        const PortReply reply = parse_port_reply(bad);
        CHECK_FALSE(reply.port);
        CHECK(reply.error == "malformed reply");
    }
    const PortReply error = parse_port_reply("error no such thing");
    CHECK_FALSE(error.port);
    CHECK(error.error == "no such thing");
    CHECK(parse_port_reply("error ").error == "malformed reply");
}

TEST_CASE("error replies are one capped line of printable text", "[proto][port_link]") {
    CHECK(port_reply_error("bad request") == "error bad request\n");
    CHECK(port_reply_error("a\nb\rc\x7f") == "error a b c \n");
    const std::string long_reply = port_reply_error(std::string(10000, 'x'));
    CHECK(long_reply.size() == kMaxPortLine);
    CHECK(long_reply.back() == '\n');
    CHECK(long_reply.find('\n') == long_reply.size() - 1);
    // What parse_port_reply reads back is the message.
    const std::string line = port_reply_error("not a hostkeeper-port 1 request");
    CHECK(parse_port_reply(line.substr(0, line.size() - 1)).error ==
          "not a hostkeeper-port 1 request");
}

TEST_CASE("a handed connection crosses a socketpair with its descriptor", "[proto][port_link]") {
    int pair[2] = {-1, -1};
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0);
    const UniqueFd service(pair[0]);
    const UniqueFd daemon(pair[1]);

    int pipe_ends[2] = {-1, -1};
    REQUIRE(::pipe2(pipe_ends, O_CLOEXEC) == 0);
    const UniqueFd read_end(pipe_ends[0]);
    UniqueFd write_end(pipe_ends[1]);

    int received = -1;
    // Nothing yet: EAGAIN, not a block.
    CHECK(receive_handed_connection(daemon.get(), received) == -1);
    CHECK(errno == EAGAIN);

    REQUIRE(send_handed_connection(service.get(), write_end.get()));
    write_end = UniqueFd(-1);  // the service closes its copy after handing
    REQUIRE(receive_handed_connection(daemon.get(), received) == 1);
    const UniqueFd handed(received);
    REQUIRE(handed.get() >= 0);
    CHECK((::fcntl(handed.get(), F_GETFD) & FD_CLOEXEC) != 0);
    // The same open file: what goes in the handed end comes out of the pipe.
    REQUIRE(::write(handed.get(), "x", 1) == 1);
    char c = 0;
    REQUIRE(::read(read_end.get(), &c, 1) == 1);
    CHECK(c == 'x');

    // A byte without a descriptor is not a handed connection.
    REQUIRE(::send(service.get(), "c", 1, MSG_NOSIGNAL) == 1);
    CHECK(receive_handed_connection(daemon.get(), received) == -1);
    CHECK(errno == EPROTO);
    CHECK(received == -1);

    // A descriptor with another byte is not one either (and is not kept).
    {
        const UniqueFd spare(::dup(read_end.get()));
        int fd = spare.get();
        char byte = 'x';
        iovec iov{&byte, 1};
        alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        cmsghdr* header = CMSG_FIRSTHDR(&msg);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(sizeof(int));
        std::memcpy(CMSG_DATA(header), &fd, sizeof fd);
        REQUIRE(::sendmsg(service.get(), &msg, MSG_NOSIGNAL) == 1);
    }
    CHECK(receive_handed_connection(daemon.get(), received) == -1);
    CHECK(errno == EPROTO);

    // The service gone: the end of the registration.
    ::shutdown(service.get(), SHUT_WR);
    CHECK(receive_handed_connection(daemon.get(), received) == 0);
}

TEST_CASE("a full link says EAGAIN and keeps the descriptor", "[proto][port_link]") {
    int pair[2] = {-1, -1};
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0);
    const UniqueFd service(pair[0]);
    const UniqueFd daemon(pair[1]);
    const int small = 4096;
    ::setsockopt(service.get(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    int sent = 0;
    bool blocked = false;
    // Bounded: the buffer (and the kernel's in-flight descriptor limit) fills
    // long before this.
    for (int i = 0; i < 100000; ++i) {
        if (!send_handed_connection(service.get(), STDIN_FILENO)) {
            blocked = true;
            break;
        }
        ++sent;
    }
    REQUIRE(blocked);
    CHECK((errno == EAGAIN || errno == ETOOMANYREFS));
    CHECK(sent > 0);
}

TEST_CASE("the port service's socket path and its checks", "[proto][port_link]") {
    ::unsetenv("HOSTKEEPER_PORT_SOCKET");
    CHECK(port_socket_path() == kPortSocket);
    ::setenv("HOSTKEEPER_PORT_SOCKET", "/tmp/x/port.sock", 1);
    CHECK(port_socket_path() == "/tmp/x/port.sock");
    ::unsetenv("HOSTKEEPER_PORT_SOCKET");
    CHECK_FALSE(port_socket_problem("relative/port.sock").empty());
    CHECK(port_socket_problem("/nonexistent/hk/port.sock").find("does not exist") !=
          std::string::npos);
    CHECK(port_guarantee_problem(585).empty() == (unprivileged_port_start().value_or(1024) > 585));
}

}  // namespace test_port_link
