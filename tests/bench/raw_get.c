/* hk_bench_raw_get SOCKET HOST: one `get` to hostkeeperd with as little as a
 * client can do (connect, one frame, read one frame, print its payload), in
 * C with libc only: the floor under any client of the daemon, to set beside
 * the credentials helper in tests/bench/startup.sh. No checks of the socket's
 * directory or peer, no deadline, no hostname normalization: not a client to
 * use, a measuring stick. Exit status 0 when the daemon answered "ok":true. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int read_exact(int fd, char* data, size_t size) {
    size_t done = 0;
    while (done < size) {
        const ssize_t n = recv(fd, data + done, size - done, 0);
        if (n <= 0) return -1;
        done += (size_t)n;
    }
    return 0;
}

int main(int argc, char** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: hk_bench_raw_get SOCKET HOST\n");
        return 2;
    }
    struct sockaddr_un address;
    memset(&address, 0, sizeof address);
    address.sun_family = AF_UNIX;
    if (strlen(argv[1]) >= sizeof address.sun_path) return 2;
    strcpy(address.sun_path, argv[1]);

    char frame[4 + 1024];
    const int length =
        snprintf(frame + 4, sizeof frame - 4, "{\"v\":1,\"op\":\"get\",\"host\":\"%s\"}", argv[2]);
    if (length < 0 || (size_t)length >= sizeof frame - 4) return 2;
    const uint32_t size = (uint32_t)length;
    frame[0] = (char)(size >> 24);
    frame[1] = (char)(size >> 16);
    frame[2] = (char)(size >> 8);
    frame[3] = (char)size;

    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (const struct sockaddr*)&address, sizeof address) != 0) {
        perror("hk_bench_raw_get: connect");
        return 1;
    }
    if (send(fd, frame, 4 + size, MSG_NOSIGNAL) != (ssize_t)(4 + size)) return 1;

    static char answer[65536];
    unsigned char header[4];
    if (read_exact(fd, (char*)header, sizeof header) != 0) return 1;
    const uint32_t answer_size = (uint32_t)header[0] << 24 | (uint32_t)header[1] << 16 |
                                 (uint32_t)header[2] << 8 | (uint32_t)header[3];
    if (answer_size >= sizeof answer || read_exact(fd, answer, answer_size) != 0) return 1;
    close(fd);
    answer[answer_size] = '\n';
    if (write(STDOUT_FILENO, answer, answer_size + 1) != (ssize_t)(answer_size + 1)) return 1;
    return strstr(answer, "\"ok\":true") != NULL ? 0 : 1;
}
