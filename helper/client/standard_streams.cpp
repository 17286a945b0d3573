#include "helper/client/standard_streams.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "proto/error.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::helper::client {
using proto::Error;
using proto::ErrorCode;

std::string read_all_input(int fd, std::size_t limit, const std::string& too_large_message) {
    // One buffer of limit + 1 bytes, never reallocated: a reallocation would
    // leave a copy of the secret behind in freed memory.
    std::string input(limit + 1, '\0');
    std::size_t size = 0;
    while (size < input.size()) {
        const ssize_t n = ::read(fd, input.data() + size, input.size() - size);
        if (n == 0) break;
        if (n < 0) {
            if (errno == EINTR) continue;
            const int error = errno;
            proto::scrub(input);
            throw Error(ErrorCode::bad_request,
                        std::string("cannot read standard input: ") + std::strerror(error));
        }
        size += static_cast<std::size_t>(n);
    }
    if (size > limit) {
        proto::scrub(input);
        throw Error(ErrorCode::too_large, too_large_message);
    }
    input.resize(size);
    return input;
}

void write_all_output(int fd, std::string_view text) {
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            throw Error(ErrorCode::internal,
                        std::string("cannot write standard output: ") + std::strerror(errno));
        done += static_cast<std::size_t>(n);
    }
}

}  // namespace hostkeeper::helper::client
