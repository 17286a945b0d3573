// Documents passed by reference: the daemon's sealed memfd, and the client's
// checks before it reads one (seals, size, limit).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "proto/sealed_file.hpp"
#include "proto/unique_fd.hpp"

namespace test_sealed_file {

using namespace hostkeeper;
using proto::BadPassedFile;
using proto::read_passed_file;
using proto::SealedFile;

TEST_CASE("a sealed file holds its bytes and can be neither written nor resized",
          "[proto][sealed_file]") {
    const std::string text = R"({"versions":[{"version":"1.0.0"}]})";
    const auto file = SealedFile::make(text);
    REQUIRE(file);
    CHECK(file->size() == text.size());
    const int seals = ::fcntl(file->fd(), F_GET_SEALS);
    CHECK((seals & F_SEAL_WRITE) != 0);
    CHECK((seals & F_SEAL_GROW) != 0);
    CHECK((seals & F_SEAL_SHRINK) != 0);
    CHECK((seals & F_SEAL_SEAL) != 0);
    CHECK(::pwrite(file->fd(), "x", 1, 0) == -1);
    CHECK(::ftruncate(file->fd(), 1) == -1);
    CHECK(::fcntl(file->fd(), F_GETFD) == FD_CLOEXEC);
    CHECK(read_passed_file(file->fd(), text.size(), 1024) == text);
}

TEST_CASE("a passed file is read only when sealed, of the named size, within the limit",
          "[proto][sealed_file]") {
    const std::string text = "{\"a\":1}";
    const auto file = SealedFile::make(text);
    REQUIRE(file);
    CHECK_THROWS_AS(read_passed_file(file->fd(), text.size() + 1, 1024), BadPassedFile);
    CHECK_THROWS_AS(read_passed_file(file->fd(), text.size() - 1, 1024), BadPassedFile);
    CHECK_THROWS_AS(read_passed_file(file->fd(), text.size(), text.size() - 1), BadPassedFile);

    // A memfd the sender could still change under the reader.
    const proto::UniqueFd unsealed(::memfd_create("test", MFD_CLOEXEC | MFD_ALLOW_SEALING));
    REQUIRE(::write(unsealed.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    CHECK_THROWS_WITH(read_passed_file(unsealed.get(), text.size(), 1024),
                      "a passed document is not a sealed memfd");
    // Sealed against writes but not against shrinking.
    REQUIRE(::fcntl(unsealed.get(), F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW) == 0);
    CHECK_THROWS_AS(read_passed_file(unsealed.get(), text.size(), 1024), BadPassedFile);

    // Not a file at all.
    int ends[2];
    REQUIRE(::pipe(ends) == 0);
    const proto::UniqueFd reader(ends[0]), writer(ends[1]);
    CHECK_THROWS_AS(read_passed_file(reader.get(), 0, 1024), BadPassedFile);
}

TEST_CASE("no more than kMaxLive sealed files at once and a dropped one frees its place",
          "[proto][sealed_file]") {
    const int before = SealedFile::live();
    std::vector<std::shared_ptr<const SealedFile>> held;
    while (SealedFile::live() < SealedFile::kMaxLive) {
        auto file = SealedFile::make("{}");
        REQUIRE(file);
        held.push_back(std::move(file));
    }
    CHECK_FALSE(SealedFile::make("{}"));
    held.pop_back();
    CHECK(SealedFile::make("{}"));
    held.clear();
    CHECK(SealedFile::live() == before);
}

TEST_CASE("no more than kMaxLiveBytes in sealed files at once", "[proto][sealed_file]") {
    const std::size_t before = SealedFile::live_bytes();
    const std::string half(SealedFile::kMaxLiveBytes / 2, 'x');
    auto first = SealedFile::make(half);
    REQUIRE(first);
    CHECK(SealedFile::live_bytes() == before + half.size());
    CHECK_FALSE(SealedFile::make(half + half));  // declined, and not counted
    CHECK(SealedFile::live_bytes() == before + half.size());
    first.reset();
    CHECK(SealedFile::live_bytes() == before);
}

}  // namespace test_sealed_file
