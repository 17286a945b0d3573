#pragma once
// A document passed by reference between hostkeeperd and its clients
// (PROTOCOL.md, Passed documents): a memfd the daemon fills once and seals
// against writes, growing, shrinking and further seals, then passes with a
// reply (SCM_RIGHTS) for as long as the document is cached. The client
// checks the seals and the size the reply names before it reads the file, so
// what it reads is what the daemon wrote and cannot change under it.
// A passed document is never a secret: the daemon passes versions lists only.

#include <atomic>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "proto/unique_fd.hpp"

namespace hostkeeper::proto {

class SealedFile {
  public:
    // At most this many, of at most this many bytes together, exist at once
    // in a process (each a descriptor, and memory beside the bytes' own
    // copy); make() declines past either.
    static constexpr int kMaxLive = 256;
    static constexpr std::size_t kMaxLiveBytes = std::size_t{64} * 1024 * 1024;

    // A sealed memfd holding `bytes`; nullptr when that would pass kMaxLive
    // or kMaxLiveBytes, or the kernel refuses (no memfd, out of descriptors):
    // the caller then sends the bytes inline.
    static std::shared_ptr<const SealedFile> make(std::string_view bytes);

    SealedFile(const SealedFile&) = delete;
    SealedFile& operator=(const SealedFile&) = delete;
    ~SealedFile();

    int fd() const { return fd_.get(); }
    std::size_t size() const { return size_; }
    static int live() { return live_.load(); }
    static std::size_t live_bytes() { return live_bytes_.load(); }

  private:
    SealedFile(UniqueFd fd, std::size_t size) : fd_(std::move(fd)), size_(size) {}

    UniqueFd fd_;
    std::size_t size_;
    static std::atomic<int> live_;
    static std::atomic<std::size_t> live_bytes_;
};

// A passed file that is not what a passed document must be.
class BadPassedFile : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// The whole of passed file `fd`, which the reply says holds `size` bytes.
// Throws BadPassedFile when it is not a memfd sealed against writes, growing
// and shrinking, or is not exactly `size` bytes long, or `size` is over
// `limit`.
std::string read_passed_file(int fd, std::size_t size, std::size_t limit);

}  // namespace hostkeeper::proto
