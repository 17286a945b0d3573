#include "daemon/archives/package_hash.hpp"

#include <openssl/evp.h>
#include <unistd.h>
#include <zip.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

namespace hostkeeper::daemon::archives {
namespace {

using Digest = std::array<unsigned char, 32>;

class Sha256 {
  public:
    Sha256() : ctx_(EVP_MD_CTX_new(), &EVP_MD_CTX_free) {
        if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1)
            throw PackageError("SHA-256 is unavailable");
    }
    void update(const void* data, std::size_t size) {
        if (EVP_DigestUpdate(ctx_.get(), data, size) != 1) throw PackageError("SHA-256 failed");
    }
    Digest finish() {
        Digest digest{};
        unsigned int size = 0;
        if (EVP_DigestFinal_ex(ctx_.get(), digest.data(), &size) != 1 || size != digest.size()) {
            throw PackageError("SHA-256 failed");
        }
        return digest;
    }

  private:
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx_;
};

std::string hex(const Digest& digest) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out;
    for (const unsigned char byte : digest) {
        out += kDigits[byte >> 4U];
        out += kDigits[byte & 15U];
    }
    return out;
}

struct ZipCloser {
    void operator()(zip_t* z) const { zip_discard(z); }
};
struct ZipFileCloser {
    void operator()(zip_file_t* f) const { zip_fclose(f); }
};

}  // namespace

std::string sha256_hex(std::string_view text) {
    Sha256 sha;
    sha.update(text.data(), text.size());
    return hex(sha.finish());
}

struct StreamingSha256::State {
    Sha256 sha;
};

StreamingSha256::StreamingSha256() : state_(std::make_unique<State>()) {}
StreamingSha256::~StreamingSha256() = default;

void StreamingSha256::update(std::string_view piece) {
    state_->sha.update(piece.data(), piece.size());
    bytes_ += piece.size();
}

std::string StreamingSha256::finish_zh() {
    return "zh:" + hex(state_->sha.finish());
}

std::string zip_hash(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw PackageError("cannot read " + path);
    Sha256 sha;
    std::vector<char> buffer(std::size_t{1} << 16);
    while (in) {
        in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
        if (in.gcount() > 0) sha.update(buffer.data(), static_cast<std::size_t>(in.gcount()));
    }
    if (in.bad()) throw PackageError("cannot read " + path);
    return "zh:" + hex(sha.finish());
}

std::string zip_hash_copy(int from, int to, std::uint64_t limit) {
    Sha256 sha;
    std::vector<char> buffer(std::size_t{1} << 16);
    std::uint64_t offset = 0;
    for (;;) {
        const ssize_t got = ::pread(from, buffer.data(), buffer.size(), static_cast<off_t>(offset));
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) throw PackageError(std::string("cannot read: ") + std::strerror(errno));
        if (got == 0) break;
        offset += static_cast<std::uint64_t>(got);
        if (offset > limit) throw PackageError("larger than a package may be");
        sha.update(buffer.data(), static_cast<std::size_t>(got));
        for (ssize_t put = 0; put < got;) {
            const ssize_t wrote =
                ::write(to, buffer.data() + put, static_cast<std::size_t>(got - put));
            if (wrote < 0 && errno == EINTR) continue;
            if (wrote < 0) throw PackageError(std::string("cannot write: ") + std::strerror(errno));
            put += wrote;
        }
    }
    return "zh:" + hex(sha.finish());
}

std::string h1_hash(const std::string& path) {
    int error = 0;
    const std::unique_ptr<zip_t, ZipCloser> archive(
        zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &error));
    if (!archive) {
        zip_error_t z;
        zip_error_init_with_code(&z, error);
        const std::string why = zip_error_strerror(&z);
        zip_error_fini(&z);
        throw PackageError("the package is not a valid zip archive: " + why);
    }
    const zip_int64_t entries = zip_get_num_entries(archive.get(), 0);
    if (entries < 0 || static_cast<std::uint64_t>(entries) > kMaxPackageEntries) {
        throw PackageError("the package has more than " + std::to_string(kMaxPackageEntries) +
                           " files");
    }
    std::vector<std::pair<std::string, zip_uint64_t>> files;
    for (zip_int64_t i = 0; i < entries; ++i) {
        const char* name =
            zip_get_name(archive.get(), static_cast<zip_uint64_t>(i), ZIP_FL_ENC_RAW);
        if (name == nullptr) throw PackageError("the package has an unreadable entry name");
        files.emplace_back(name, static_cast<zip_uint64_t>(i));
    }
    std::sort(files.begin(), files.end());
    Sha256 summary;
    std::vector<char> buffer(std::size_t{1} << 16);
    std::uint64_t unpacked = 0;
    for (const auto& [name, index] : files) {
        if (name.find('\n') != std::string::npos)
            throw PackageError("the package names a file with a newline");
        const std::unique_ptr<zip_file_t, ZipFileCloser> file(
            zip_fopen_index(archive.get(), index, 0));
        if (!file)
            throw PackageError("cannot read " + name +
                               " in the package: " + zip_strerror(archive.get()));
        Sha256 sha;
        for (;;) {
            const zip_int64_t n = zip_fread(file.get(), buffer.data(), buffer.size());
            if (n < 0)
                throw PackageError("cannot read " + name +
                                   " in the package: " + zip_file_strerror(file.get()));
            if (n == 0) break;
            unpacked += static_cast<std::uint64_t>(n);
            if (unpacked > kMaxPackageUnpacked) {
                throw PackageError("the package unpacks to more than " +
                                   std::to_string(kMaxPackageUnpacked >> 30U) + " GiB");
            }
            sha.update(buffer.data(), static_cast<std::size_t>(n));
        }
        const std::string line = hex(sha.finish()) + "  " + name + "\n";
        summary.update(line.data(), line.size());
    }
    const Digest digest = summary.finish();
    std::array<unsigned char, 4 * ((32 + 2) / 3) + 1> encoded{};
    EVP_EncodeBlock(encoded.data(), digest.data(), static_cast<int>(digest.size()));
    return "h1:" + std::string(reinterpret_cast<const char*>(encoded.data()));
}

}  // namespace hostkeeper::daemon::archives
