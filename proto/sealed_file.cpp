#include "proto/sealed_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace hostkeeper::proto {
namespace {

constexpr int kSeals = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;
constexpr int kNeeded = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;

bool write_whole(int fd, std::string_view bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += static_cast<std::size_t>(n);
    }
    return true;
}

}  // namespace

std::atomic<int> SealedFile::live_{0};
std::atomic<std::size_t> SealedFile::live_bytes_{0};

std::shared_ptr<const SealedFile> SealedFile::make(std::string_view bytes) {
    // Counted first, so that two makers at once cannot both pass a limit.
    const int count = live_.fetch_add(1) + 1;
    const std::size_t total = live_bytes_.fetch_add(bytes.size()) + bytes.size();
    const bool over = count > kMaxLive || total > kMaxLiveBytes;
    UniqueFd fd(-1);
    if (!over)
        fd = UniqueFd(::memfd_create("hostkeeper-document", MFD_CLOEXEC | MFD_ALLOW_SEALING));
    if (over || fd.get() < 0 || !write_whole(fd.get(), bytes) ||
        ::fcntl(fd.get(), F_ADD_SEALS, kSeals) != 0) {
        live_.fetch_sub(1);
        live_bytes_.fetch_sub(bytes.size());
        return nullptr;
    }
    return std::shared_ptr<const SealedFile>(new SealedFile(std::move(fd), bytes.size()));
}

SealedFile::~SealedFile() {
    live_.fetch_sub(1);
    live_bytes_.fetch_sub(size_);
}

std::string read_passed_file(int fd, std::size_t size, std::size_t limit) {
    if (size > limit) {
        throw BadPassedFile("a passed document of " + std::to_string(size) +
                            " bytes is over the limit of " + std::to_string(limit));
    }
    const int seals = ::fcntl(fd, F_GET_SEALS);
    if (seals < 0 || (seals & kNeeded) != kNeeded)
        throw BadPassedFile("a passed document is not a sealed memfd");
    struct stat status {};
    if (::fstat(fd, &status) != 0 || !S_ISREG(status.st_mode) || status.st_size < 0 ||
        static_cast<std::size_t>(status.st_size) != size) {
        throw BadPassedFile("a passed document is not the size its reply names (" +
                            std::to_string(size) + " bytes)");
    }
    std::string bytes(size, '\0');
    std::size_t done = 0;
    while (done < size) {
        const ssize_t n = ::pread(fd, bytes.data() + done, size - done, static_cast<off_t>(done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw BadPassedFile("a passed document could not be read whole");
        done += static_cast<std::size_t>(n);
    }
    return bytes;
}

}  // namespace hostkeeper::proto
