// Archives followed while they download: get() returns once the first bytes
// are in the temp file; every reader (one download for all) may send all
// but the last byte until the verdict; a verified archive is stored and
// whole, one that fails verification after its first bytes went is stored
// nowhere and its readers see it fail. GrowingArchive on its own: what may
// be sent, the length announced, and the wake-ups of its readers.
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "daemon/archives/archive_store.hpp"
#include "daemon/archives/growing_archive.hpp"
#include "daemon/archives/package_hash.hpp"
#include "fake_http_client.hpp"

namespace test_streaming_archives {

using namespace hostkeeper;
using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace fs = std::filesystem;
using daemon::archives::Archive;
using daemon::archives::ArchiveRequest;
using daemon::archives::ArchiveStore;
using daemon::archives::ArchiveStoreOptions;
using daemon::archives::GrowingArchive;
using daemon::http::HttpResponse;
using test::FakeHttpClient;

namespace {

const std::string kUrl = "https://cdn.example/archive.tar.gz";

HttpResponse bytes(std::string body) {
    HttpResponse r;
    r.status = 200;
    r.body = std::move(body);
    return r;
}

std::string read_all(const Archive& archive, std::size_t up_to) {
    std::string out(up_to + 1, '\0');
    const ssize_t n = ::pread(archive.fd.get(), out.data(), out.size(), 0);
    REQUIRE(n >= 0);
    out.resize(static_cast<std::size_t>(n));
    return out;
}

std::size_t files_in(const fs::path& dir) {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir)) ++n;
    return n;
}

struct Fixture {
    Fixture() {
        char pattern[] = "/tmp/hk-streaming-XXXXXX";
        root = ::mkdtemp(pattern);
        ArchiveStoreOptions o;
        o.dir = root / "archives";
        o.max_bytes = std::size_t{1} << 30;
        o.fetch_timeout = 10s;
        store.emplace(io.get_executor(), http, o);
    }
    ~Fixture() {
        store.reset();
        fs::remove_all(root);
    }
    Fixture(const Fixture&) = delete;
    Fixture& operator=(const Fixture&) = delete;

    // get(request) started; `slot` has the archive once it returns.
    void get(const ArchiveRequest& request, std::optional<Archive>& slot) {
        asio::co_spawn(io, store->get(request),
                       [&slot, this](const std::exception_ptr& e, std::optional<Archive> a) {
                           if (e)
                               ++failed;
                           else
                               slot = std::move(a);
                       });
    }

    fs::path root;
    asio::io_context io;
    FakeHttpClient http{io.get_executor()};
    std::optional<ArchiveStore> store;
    int failed = 0;
};

ArchiveRequest module_request(FakeHttpClient& http, const std::string& body) {
    http.routes[kUrl] = [body] { return bytes(body); };
    ArchiveRequest r;
    r.key = daemon::archives::module_archive_key(kUrl);
    r.url = kUrl;
    r.verify = false;
    r.what = "module acme/thing/aws";
    return r;
}

// A plain function, not a lambda coroutine (named first).
asio::awaitable<void> count_change(GrowingArchive& growing, int& woken) {
    auto waiting = growing.changed();
    co_await std::move(waiting);
    ++woken;
}

}  // namespace

TEST_CASE("streaming: readers follow one download; the last byte waits for the verdict",
          "[archives]") {
    Fixture f;
    const std::string body(1000, 'm');
    const ArchiveRequest request = module_request(f.http, body);
    f.http.hold_midway();
    std::optional<Archive> first;
    std::optional<Archive> second;
    f.get(request, first);
    f.get(request, second);
    f.io.poll();  // half of the body is in; the download waits for the rest
    REQUIRE(first);
    REQUIRE(second);
    for (const Archive* archive : {&*first, &*second}) {
        REQUIRE(archive->growing);
        const auto extent = archive->growing->extent();
        CHECK(extent.sendable == 499);  // all but the last byte written
        CHECK_FALSE(extent.whole);
        CHECK(archive->growing->announced() == body.size());
        CHECK(read_all(*archive, body.size()) == body.substr(0, 500));
    }
    CHECK(f.http.requests.size() == 1);
    CHECK_FALSE(fs::exists(f.root / "archives" / request.key));  // not stored before it is whole
    CHECK(files_in(f.root / "archives" / "tmp") == 1);

    f.http.release();
    f.io.restart();
    f.io.run();
    CHECK(f.failed == 0);
    const auto extent = first->growing->extent();
    CHECK(extent.whole);
    CHECK(extent.sendable == body.size());
    CHECK(read_all(*first, body.size()) == body);
    CHECK(read_all(*second, body.size()) == body);
    CHECK(fs::file_size(f.root / "archives" / request.key) == body.size());
    CHECK(files_in(f.root / "archives" / "tmp") == 0);
    CHECK(f.store->stats().downloads == 1);
    CHECK(f.http.requests.size() == 1);
}

TEST_CASE("streaming: a package that does not verify after its first bytes went is stored nowhere",
          "[archives]") {
    Fixture f;
    const std::string bad(2000, 'x');
    const std::string good(2000, 'g');
    f.http.routes[kUrl] = [bad] { return bytes(bad); };
    ArchiveRequest request;
    request.key = "providers/" + daemon::archives::sha256_hex(good);
    request.url = kUrl;
    request.published = {"zh:" + daemon::archives::sha256_hex(good)};
    request.what = "provider acme/thing";
    f.http.hold_midway();
    std::optional<Archive> reader;
    f.get(request, reader);
    f.io.poll();
    REQUIRE(reader);
    REQUIRE(reader->growing);
    CHECK(reader->growing->extent().sendable == 999);

    f.http.release();
    f.io.restart();
    f.io.run();
    CHECK(reader->growing->extent().failed);  // the reader's response is cut short
    CHECK_FALSE(fs::exists(f.root / "archives" / request.key));
    CHECK(files_in(f.root / "archives" / "providers") == 0);
    CHECK(files_in(f.root / "archives" / "tmp") == 0);
    CHECK(f.store->stats().failures == 1);

    // A get after the failure starts again, and a failure before any byte is its error.
    f.http.routes[kUrl] = [] { return bytes(""); };
    std::optional<Archive> again;
    f.get(request, again);
    f.io.restart();
    f.io.run();
    CHECK_FALSE(again);
    CHECK(f.failed == 1);
    CHECK(f.http.requests.size() == 2);
}

TEST_CASE("streaming: a growing archive's extent, announced length and wake-ups", "[archives]") {
    asio::io_context io;
    GrowingArchive growing(io.get_executor());
    CHECK_FALSE(growing.started());
    CHECK(growing.extent().sendable == 0);

    int woken = 0;
    asio::co_spawn(io, count_change(growing, woken), asio::detached);
    io.poll();
    CHECK(woken == 0);  // nothing changed yet: it waits, it does not spin
    growing.grew(10, 30);
    io.poll();
    CHECK(woken == 1);
    CHECK(growing.started());
    CHECK(growing.extent().sendable == 9);
    growing.grew(20, std::nullopt);  // the length is the first piece's
    CHECK(growing.announced() == 30U);
    CHECK(growing.extent().sendable == 29);
    growing.finish(30);
    CHECK(growing.extent().whole);
    CHECK(growing.extent().sendable == 30);

    GrowingArchive failed(io.get_executor());
    failed.grew(5, std::nullopt);
    failed.fail(std::make_exception_ptr(std::runtime_error("no")));
    CHECK(failed.extent().failed);
    CHECK(failed.error());

    GrowingArchive whole_at_once(io.get_executor());  // no piece told: whole when it ends
    whole_at_once.finish(7);
    CHECK(whole_at_once.started());
    CHECK(whole_at_once.announced() == 7U);

    // Verified and whole, then not stored (a full disk): its readers keep it.
    growing.fail(std::make_exception_ptr(std::runtime_error("disk full")));
    CHECK_FALSE(growing.extent().failed);
    CHECK(growing.extent().whole);
    CHECK(growing.extent().sendable == 30);
    CHECK_FALSE(growing.error());
}

}  // namespace test_streaming_archives
