/* hk_bench_floor_server SOCKET BYTES [memfd]: a stand-in for hostkeeperd that does as
 * little as a server of its protocol can, in C with libc only: one thread,
 * one epoll set, and for every request frame (read whole, never parsed) one
 * writev of a reply frame whose payload is BYTES bytes of JSON,
 * {"v":1,"ok":true,"source":"cache","pad":"xx..."}. Load on it with
 * hk_bench_socket_load, as on the daemon, measures the floor under any
 * server that sends a reply of that size through a Unix stream socket on
 * this machine: what the kernel's transfer costs on its own (registry.sh sets
 * it beside the daemon's cached module_versions and provider_versions).
 * With `memfd`, the BYTES go once into a sealed memfd instead, and every
 * reply is a small frame, {"v":1,"ok":true,"source":"cache","document_bytes":
 * BYTES}, with that memfd attached (SCM_RIGHTS) for the client to read
 * (hk_bench_socket_load --receive-fds): what passing a prepared document by
 * reference instead of by copy costs.
 * Not a server to use, a measuring stick: no peer checks, no deadlines.
 * Runs until SIGTERM or SIGINT; exit status 0 then, 1 on a setup error. */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

enum { kHeader = 4, kMaxRequest = 64 * 1024 };

struct connection {
    int fd;
    size_t have; /* bytes of the request frame read so far */
    int pending; /* a reply is being written */
    size_t sent; /* bytes of that reply frame written so far */
    unsigned char request[kHeader + kMaxRequest];
};

static volatile sig_atomic_t stopping = 0;
static void on_signal(int signal_number) {
    (void)signal_number;
    stopping = 1;
}

static unsigned char reply_header[kHeader];
static char* reply = NULL;
static size_t reply_size = 0;
static int document_fd = -1; /* memfd mode: attached to every reply */

static void close_connection(int epoll, struct connection* c) {
    epoll_ctl(epoll, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c);
}

/* Writes what is left of the reply frame; 1 when all of it went, 0 when the
 * socket is full (EPOLLOUT then), -1 on an error. */
static int write_reply(struct connection* c) {
    const size_t total = kHeader + reply_size;
    while (c->sent < total) {
        struct iovec parts[2];
        int count = 0;
        if (c->sent < kHeader) {
            parts[count].iov_base = reply_header + c->sent;
            parts[count++].iov_len = kHeader - c->sent;
        }
        const size_t body_done = c->sent < kHeader ? 0 : c->sent - kHeader;
        parts[count].iov_base = reply + body_done;
        parts[count++].iov_len = reply_size - body_done;
        struct msghdr message;
        memset(&message, 0, sizeof message);
        message.msg_iov = parts;
        message.msg_iovlen = (size_t)count;
        union {
            char bytes[CMSG_SPACE(sizeof(int))];
            struct cmsghdr align;
        } control;
        if (document_fd >= 0 && c->sent == 0) {
            memset(&control, 0, sizeof control);
            message.msg_control = control.bytes;
            message.msg_controllen = sizeof control.bytes;
            struct cmsghdr* header = CMSG_FIRSTHDR(&message);
            header->cmsg_level = SOL_SOCKET;
            header->cmsg_type = SCM_RIGHTS;
            header->cmsg_len = CMSG_LEN(sizeof(int));
            memcpy(CMSG_DATA(header), &document_fd, sizeof(int));
        }
        const ssize_t n = sendmsg(c->fd, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
        if (n <= 0) return -1;
        c->sent += (size_t)n;
    }
    c->sent = 0;
    return 1;
}

/* Reads and answers whole request frames; -1 when the connection ends. */
static int serve(int epoll, struct connection* c) {
    for (;;) {
        if (c->pending) {
            const int written = write_reply(c);
            if (written < 0) return -1;
            struct epoll_event event = {.events = written == 0 ? EPOLLOUT : EPOLLIN, .data.ptr = c};
            if (epoll_ctl(epoll, EPOLL_CTL_MOD, c->fd, &event) != 0) return -1;
            if (written == 0) return 0;
            c->pending = 0;
        }
        size_t need = kHeader;
        if (c->have >= kHeader) {
            need += ((size_t)c->request[0] << 24) | ((size_t)c->request[1] << 16) |
                    ((size_t)c->request[2] << 8) | (size_t)c->request[3];
            if (need > sizeof c->request) return -1;
        }
        if (c->have >= kHeader && c->have == need) {
            c->have = 0;
            c->pending = 1;
            continue;
        }
        const ssize_t n = recv(c->fd, c->request + c->have, need - c->have, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
        if (n <= 0) return -1;
        c->have += (size_t)n;
    }
}

static int make_reply(size_t bytes, int by_memfd) {
    static const char head[] = "{\"v\":1,\"ok\":true,\"source\":\"cache\",\"pad\":\"";
    static const char tail[] = "\"}";
    const size_t fixed = sizeof head - 1 + sizeof tail - 1;
    if (bytes < fixed || bytes > 16u * 1024 * 1024) return -1;
    reply = malloc(bytes);
    if (reply == NULL) return -1;
    memcpy(reply, head, sizeof head - 1);
    memset(reply + sizeof head - 1, 'x', bytes - fixed);
    memcpy(reply + bytes - (sizeof tail - 1), tail, sizeof tail - 1);
    reply_size = bytes;
    if (by_memfd) {
        document_fd = memfd_create("hk-floor-document", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (document_fd < 0 || write(document_fd, reply, bytes) != (ssize_t)bytes ||
            fcntl(document_fd, F_ADD_SEALS,
                  F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
            return -1;
        }
        const int length =
            snprintf(reply, bytes,
                     "{\"v\":1,\"ok\":true,\"source\":\"cache\",\"document_bytes\":%zu}", bytes);
        if (length < 0 || (size_t)length >= bytes) return -1;
        reply_size = (size_t)length;
    }
    bytes = reply_size;
    const uint32_t size = (uint32_t)bytes;
    reply_header[0] = (unsigned char)(size >> 24);
    reply_header[1] = (unsigned char)(size >> 16);
    reply_header[2] = (unsigned char)(size >> 8);
    reply_header[3] = (unsigned char)size;
    return 0;
}

int main(int argc, char** argv) {
    char* end = NULL;
    const int by_memfd = argc == 4 && strcmp(argv[3], "memfd") == 0;
    const unsigned long bytes = argc == 3 || by_memfd ? strtoul(argv[2], &end, 10) : 0;
    if (bytes == 0 || end == argv[2] || *end != '\0' || make_reply(bytes, by_memfd) != 0) {
        fprintf(stderr, "usage: hk_bench_floor_server SOCKET BYTES [memfd] (BYTES >= 80)\n");
        return 2;
    }
    struct sockaddr_un address;
    memset(&address, 0, sizeof address);
    address.sun_family = AF_UNIX;
    if (strlen(argv[1]) >= sizeof address.sun_path) return 2;
    strcpy(address.sun_path, argv[1]);
    const int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    umask(077);
    if (listener < 0 || bind(listener, (struct sockaddr*)&address, sizeof address) != 0 ||
        listen(listener, 128) != 0) {
        perror("hk_bench_floor_server: listen");
        return 1;
    }
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_signal;
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);
    const int epoll = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event event = {.events = EPOLLIN, .data.ptr = NULL};
    if (epoll < 0 || epoll_ctl(epoll, EPOLL_CTL_ADD, listener, &event) != 0) return 1;
    struct epoll_event events[64];
    while (!stopping) {
        const int ready = epoll_wait(epoll, events, 64, -1);
        for (int i = 0; i < ready; ++i) {
            struct connection* c = events[i].data.ptr;
            if (c == NULL) {
                const int fd = accept4(listener, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (fd < 0) continue;
                c = calloc(1, sizeof *c);
                struct epoll_event added = {.events = EPOLLIN, .data.ptr = c};
                if (c == NULL || (c->fd = fd, epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &added) != 0)) {
                    close(fd);
                    free(c);
                }
                continue;
            }
            if (serve(epoll, c) < 0) close_connection(epoll, c);
        }
    }
    unlink(argv[1]);
    return 0;
}
