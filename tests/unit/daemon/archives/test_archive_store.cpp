// The archive cache over a scripted HTTP client and a temp directory: one
// download per key (single flight), verification before anything is
// stored, LRU eviction by mtime, open descriptors that outlive eviction, key
// checks, temp files swept, and a directory shared by two stores (two
// daemons). Provider packages are real zip archives built here.
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "daemon/archives/archive_store.hpp"
#include "daemon/archives/package_hash.hpp"
#include "fake_http_client.hpp"
#include "proto/error.hpp"
#include "run_awaitable.hpp"

namespace test_archive_store {

using namespace hostkeeper;
using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace fs = std::filesystem;
using daemon::archives::Archive;
using daemon::archives::ArchiveRequest;
using daemon::archives::ArchiveStore;
using daemon::archives::ArchiveStoreOptions;
using daemon::http::HttpResponse;
using proto::Error;
using proto::ErrorCode;
using test::FakeHttpClient;

namespace {

// A zip archive with one stored (uncompressed) file, as libzip reads it.
std::uint32_t crc32(const std::string& data) {
    std::uint32_t crc = 0xFFFFFFFFU;
    for (const char c : data) {
        crc ^= static_cast<unsigned char>(c);
        for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1U) ^ (0xEDB88320U & (0U - (crc & 1U)));
    }
    return ~crc;
}

void put16(std::string& out, std::uint32_t v) {
    out += static_cast<char>(v & 0xFFU);
    out += static_cast<char>((v >> 8U) & 0xFFU);
}
void put32(std::string& out, std::uint32_t v) {
    put16(out, v & 0xFFFFU);
    put16(out, v >> 16U);
}

std::string zip_of(const std::string& name, const std::string& contents) {
    const auto size = static_cast<std::uint32_t>(contents.size());
    const auto name_size = static_cast<std::uint32_t>(name.size());
    const std::uint32_t crc = crc32(contents);
    const auto common = [&](std::string& out) {
        put16(out, 20);  // version needed
        put16(out, 0);   // flags
        put16(out, 0);   // stored
        put16(out, 0);   // time
        put16(out, 33);  // date: 1980-01-01
        put32(out, crc);
        put32(out, size);
        put32(out, size);
        put16(out, name_size);
        put16(out, 0);  // extra
    };
    std::string zip;
    put32(zip, 0x04034b50);
    common(zip);
    zip += name + contents;
    const auto directory_at = static_cast<std::uint32_t>(zip.size());
    std::string directory;
    put32(directory, 0x02014b50);
    put16(directory, 20);  // made by
    common(directory);
    put16(directory, 0);  // comment
    put16(directory, 0);  // disk
    put16(directory, 0);  // internal attributes
    put32(directory, 0);  // external attributes
    put32(directory, 0);  // local header at
    directory += name;
    zip += directory;
    put32(zip, 0x06054b50);
    put16(zip, 0);
    put16(zip, 0);
    put16(zip, 1);
    put16(zip, 1);
    put32(zip, static_cast<std::uint32_t>(directory.size()));
    put32(zip, directory_at);
    put16(zip, 0);
    return zip;
}

std::string sha256(const std::string& bytes) {
    return daemon::archives::sha256_hex(bytes);
}

HttpResponse bytes(std::string body) {
    HttpResponse r;
    r.status = 200;
    r.content_type = "application/zip";
    r.body = std::move(body);
    return r;
}

// Everything the descriptor reads, from offset 0.
std::string contents(const Archive& archive) {
    std::string out(archive.size + 1, '\0');
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

// The disk space a file takes, as the cap counts it.
std::uint64_t disk_of(const fs::path& path) {
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    return static_cast<std::uint64_t>(st.st_blocks) * 512U;
}

void set_age(const fs::path& path, std::chrono::minutes age) {
    fs::last_write_time(path, fs::file_time_type::clock::now() - age);
}

struct Fixture {
    Fixture() {
        char pattern[] = "/tmp/hk-archives-XXXXXX";
        root = ::mkdtemp(pattern);
        dir = root / "cache" / "hostkeeper" / "archives";  // parents made too
    }
    ~Fixture() { fs::remove_all(root); }
    Fixture(const Fixture&) = delete;
    Fixture& operator=(const Fixture&) = delete;

    ArchiveStoreOptions options(std::size_t max_bytes = std::size_t{1} << 30) const {
        ArchiveStoreOptions o;
        o.dir = dir;
        o.max_bytes = max_bytes;
        o.fetch_timeout = 10s;
        return o;
    }

    template <typename T>
    T run(asio::awaitable<T> work) {
        T result = test::run_until_idle(io, std::move(work));
        // Followed to its end: a download that failed after its first bytes fails here.
        if constexpr (std::is_same_v<T, Archive>) {
            if (result.growing && result.growing->error())
                std::rethrow_exception(result.growing->error());
        }
        return result;
    }

    Error error_of(asio::awaitable<Archive> work) {
        try {
            run(std::move(work));
        } catch (const Error& e) {
            return e;
        }
        FAIL("no proto::Error");
        return Error(ErrorCode::internal, "unreachable");
    }

    // A provider package served at `url`, and the request for it.
    ArchiveRequest provider(const std::string& url, const std::string& zip) {
        http.routes[url] = [zip] { return bytes(zip); };
        ArchiveRequest r;
        r.key = "providers/" + sha256(zip);
        r.url = url;
        r.published = {"zh:" + sha256(zip)};
        r.what = "provider acme/thing";
        return r;
    }

    // A module archive (nothing published) of `size` bytes at `url`.
    ArchiveRequest module(const std::string& url, std::size_t size, char fill = 'm') {
        const std::string body(size, fill);
        http.routes[url] = [body] { return bytes(body); };
        ArchiveRequest r;
        r.key = daemon::archives::module_archive_key(url);
        r.url = url;
        r.verify = false;
        r.what = "module acme/thing/aws";
        return r;
    }

    fs::path root;
    fs::path dir;
    asio::io_context io;
    FakeHttpClient http{io.get_executor()};
};

const std::string kUrl = "https://cdn.example/terraform-provider-thing_1.0.0_linux_amd64.zip";

}  // namespace

TEST_CASE("archives: a miss downloads and stores, the next get is a hit", "[archives]") {
    Fixture f;
    const std::string zip = zip_of("terraform-provider-thing", "binary");
    ArchiveStore store(f.io.get_executor(), f.http, f.options());
    const ArchiveRequest request = f.provider(kUrl, zip);

    CHECK_FALSE(f.run(store.find(request.key)));
    const Archive first = f.run(store.get(request));
    CHECK(contents(first) == zip);
    CHECK(first.size == zip.size());
    CHECK(first.filename_hint == "terraform-provider-thing_1.0.0_linux_amd64.zip");
    const Archive second = f.run(store.get(request));
    CHECK(contents(second) == zip);

    CHECK(f.http.requests.size() == 1);
    CHECK_FALSE(f.http.requests[0].bearer);  // archive URLs get no credentials
    CHECK(fs::exists(f.dir / request.key));
    CHECK(files_in(f.dir / "tmp") == 0);
    const auto stats = store.stats();
    CHECK(stats.count == 1);
    CHECK(stats.bytes == disk_of(f.dir / request.key));
    CHECK(stats.downloads == 1);
    CHECK(stats.hits == 1);
    CHECK(stats.failures == 0);
    // Private: the directory and its parents made 0700.
    for (const fs::path& d : {f.dir, f.dir.parent_path(), f.dir / "providers", f.dir / "tmp"}) {
        struct stat st {};
        REQUIRE(::stat(d.c_str(), &st) == 0);
        CHECK((st.st_mode & 0777U) == 0700U);
    }
}

TEST_CASE("archives: twenty concurrent gets of one key download it once", "[archives]") {
    Fixture f;
    const std::string zip = zip_of("terraform-provider-thing", "twenty");
    ArchiveStore store(f.io.get_executor(), f.http, f.options());
    const ArchiveRequest request = f.provider(kUrl, zip);
    f.http.hold();
    std::vector<std::optional<Archive>> got(20);
    int failed = 0;
    for (auto& slot : got) {
        asio::co_spawn(f.io, store.get(request),
                       [&slot, &failed](const std::exception_ptr& e, std::optional<Archive> a) {
                           if (e) ++failed;
                           slot = std::move(a);
                       });
    }
    f.io.poll();  // every get waits: on the held download, or on its flight
    CHECK(f.http.requests.size() == 1);
    f.http.release();
    f.io.restart();
    f.io.run();
    CHECK(failed == 0);
    CHECK(f.http.requests.size() == 1);
    for (const auto& archive : got) {
        REQUIRE(archive);
        CHECK(contents(*archive) == zip);
    }
    CHECK(store.stats().downloads == 1);
}

TEST_CASE("archives: a hash mismatch stores nothing, and the next get tries again", "[archives]") {
    Fixture f;
    const std::string good = zip_of("terraform-provider-thing", "good");
    const std::string bad = zip_of("terraform-provider-thing", "tampered");
    ArchiveStore store(f.io.get_executor(), f.http, f.options());
    const ArchiveRequest request = f.provider(kUrl, good);
    f.http.routes[kUrl] = [bad] { return bytes(bad); };

    const Error e = f.error_of(store.get(request));
    CHECK(e.code() == ErrorCode::verification_failed);
    CHECK_THAT(e.what(), Catch::Contains("zh:" + sha256(bad)));   // what it is
    CHECK_THAT(e.what(), Catch::Contains("zh:" + sha256(good)));  // what it should be
    CHECK_FALSE(fs::exists(f.dir / request.key));
    CHECK(files_in(f.dir / "providers") == 0);
    CHECK(files_in(f.dir / "tmp") == 0);
    CHECK(store.stats().failures == 1);
    CHECK(store.stats().count == 0);

    f.http.routes[kUrl] = [good] { return bytes(good); };
    CHECK(contents(f.run(store.get(request))) == good);
    CHECK(f.http.requests.size() == 2);
}

TEST_CASE("archives: an h1: mismatch is refused too", "[archives]") {
    Fixture f;
    const std::string zip = zip_of("terraform-provider-thing", "contents");
    ArchiveStore store(f.io.get_executor(), f.http, f.options());
    ArchiveRequest request = f.provider(kUrl, zip);
    request.published = {"h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="};
    const Error e = f.error_of(store.get(request));
    CHECK(e.code() == ErrorCode::verification_failed);
    CHECK_THAT(e.what(), Catch::Contains("h1:AAAAAAAA"));
    CHECK(files_in(f.dir / "providers") == 0);
}

TEST_CASE("archives: a provider's published zh: must be its key", "[archives]") {
    Fixture f;
    const std::string zip = zip_of("terraform-provider-thing", "contents");
    ArchiveStore store(f.io.get_executor(), f.http, f.options());
    ArchiveRequest request = f.provider(kUrl, zip);
    request.key = "providers/" + sha256("something else");
    CHECK(f.error_of(store.get(request)).code() == ErrorCode::bad_request);
    // Only an h1: published: the key's zh: is still checked against the file.
    request.published = {"h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="};
    const Error e = f.error_of(store.get(request));
    CHECK(e.code() == ErrorCode::verification_failed);
    CHECK_THAT(e.what(), Catch::Contains("zh:" + sha256(zip)));
    CHECK(files_in(f.dir / "providers") == 0);
}

TEST_CASE("archives: the least recently used go first, never the one just stored", "[archives]") {
    Fixture f;
    // Sizes in whole blocks of 4 KiB: the cap counts the disk a file takes.
    constexpr std::size_t kUnit = 40960;
    ArchiveStore store(f.io.get_executor(), f.http, f.options(kUnit * 5 / 2));
    const ArchiveRequest a = f.module("https://git.example/a.tar.gz", kUnit);
    const ArchiveRequest b = f.module("https://git.example/b.tar.gz", kUnit);
    const ArchiveRequest c = f.module("https://git.example/c.tar.gz", kUnit);
    const ArchiveRequest big = f.module("https://git.example/big.tar.gz", kUnit * 4);
    f.run(store.get(a));
    f.run(store.get(b));
    set_age(f.dir / a.key, 120min);  // a is older than b ...
    set_age(f.dir / b.key, 60min);
    CHECK(f.run(store.find(a.key)));  // ... until it is used again
    f.run(store.get(c));              // 300 bytes: one goes
    CHECK(fs::exists(f.dir / a.key));
    CHECK_FALSE(fs::exists(f.dir / b.key));
    CHECK(fs::exists(f.dir / c.key));
    CHECK(store.stats().evictions == 1);
    CHECK(store.stats().bytes == disk_of(f.dir / a.key) + disk_of(f.dir / c.key));

    // Larger than the cap on its own: kept, everything else goes.
    const Archive kept = f.run(store.get(big));
    CHECK(contents(kept).size() == kUnit * 4);
    CHECK(fs::exists(f.dir / big.key));
    CHECK(files_in(f.dir / "modules") == 1);
    CHECK(store.stats().evictions == 3);
    CHECK(store.stats().count == 1);
}

TEST_CASE("archives: an archive being served is not evicted; once its lease goes it is",
          "[archives]") {
    Fixture f;
    constexpr std::size_t kUnit = 40960;  // whole blocks: the cap counts the disk a file takes
    ArchiveStore store(f.io.get_executor(), f.http, f.options(kUnit * 3 / 2));
    const ArchiveRequest a = f.module("https://git.example/a.tar.gz", kUnit, 'a');
    const ArchiveRequest b = f.module("https://git.example/b.tar.gz", kUnit, 'b');
    const ArchiveRequest c = f.module("https://git.example/c.tar.gz", kUnit, 'c');
    Archive held = f.run(store.get(a));
    REQUIRE(held.lease);
    set_age(f.dir / a.key, 60min);
    f.run(store.get(b));
    CHECK(fs::exists(f.dir / a.key));  // in use: skipped, over the cap for now
    CHECK(store.stats().evictions == 0);

    held.lease.reset();  // answered, but the descriptor still open
    set_age(f.dir / b.key, 30min);
    f.run(store.get(c));
    CHECK_FALSE(fs::exists(f.dir / a.key));            // evicted ...
    CHECK_FALSE(fs::exists(f.dir / b.key));            // ... and b, to meet the cap
    CHECK(contents(held) == std::string(kUnit, 'a'));  // ... and still readable
    CHECK(store.stats().bytes <= kUnit * 3 / 2);
}

TEST_CASE("archives: keys, URLs and unverified providers are refused", "[archives]") {
    Fixture f;
    ArchiveStore store(f.io.get_executor(), f.http, f.options());
    const std::string hex(64, 'a');
    for (const std::string& key :
         {std::string(), "providers/" + hex.substr(1), "providers/" + std::string(64, 'A'),
          "providers/" + hex + "/", "../providers/" + hex, "providers/../" + hex.substr(3),
          "tmp/" + hex, "/providers/" + hex, "providers//" + hex.substr(1),
          "modules/" + hex + ".zip"}) {
        INFO(key);
        try {
            f.run(store.find(key));
            FAIL("accepted");
        } catch (const Error& e) {
            CHECK(e.code() == ErrorCode::bad_request);
        }
        ArchiveRequest r = f.module("https://git.example/x.tar.gz", 10);
        r.key = key;
        CHECK(f.error_of(store.get(r)).code() == ErrorCode::bad_request);
    }
    CHECK_NOTHROW(f.run(store.find("modules/" + hex)));

    ArchiveRequest unverified = f.provider(kUrl, zip_of("p", "x"));
    unverified.verify = false;
    CHECK(f.error_of(store.get(unverified)).code() == ErrorCode::bad_request);
    ArchiveRequest ftp = f.module("ftp://git.example/x.tar.gz", 10);
    CHECK(f.error_of(store.get(ftp)).code() == ErrorCode::bad_request);
    ArchiveRequest nothing_published = f.provider(kUrl, zip_of("p", "x"));
    nothing_published.published = {"sha256:abc"};
    CHECK(f.error_of(store.get(nothing_published)).code() == ErrorCode::verification_failed);
    CHECK(f.http.requests.empty());
}

TEST_CASE("archives: temp files older than an hour are swept at start", "[archives]") {
    Fixture f;
    fs::create_directories(f.dir / "tmp");
    for (fs::path d = f.dir / "tmp"; d != f.root; d = d.parent_path())
        fs::permissions(d, fs::perms::owner_all);  // 0700, as the store makes them
    std::ofstream(f.dir / "tmp" / "4242-abcdef") << "half a download";
    std::ofstream(f.dir / "tmp" / "4243-ghijkl") << "a download in progress";
    set_age(f.dir / "tmp" / "4242-abcdef", 61min);
    set_age(f.dir / "tmp" / "4243-ghijkl", 10min);
    const ArchiveStore store(f.io.get_executor(), f.http, f.options());
    CHECK_FALSE(fs::exists(f.dir / "tmp" / "4242-abcdef"));
    CHECK(fs::exists(f.dir / "tmp" / "4243-ghijkl"));  // another daemon's, still going
    CHECK(store.stats().count == 0);
}

TEST_CASE("archives: a second store on the same directory sees the first's archives",
          "[archives]") {
    Fixture f;
    const std::string zip = zip_of("terraform-provider-thing", "shared");
    ArchiveStore first(f.io.get_executor(), f.http, f.options());
    const ArchiveRequest request = f.provider(kUrl, zip);
    f.run(first.get(request));

    ArchiveStore second(f.io.get_executor(), f.http, f.options());
    CHECK(second.stats().count == 1);
    CHECK(second.stats().bytes == disk_of(f.dir / request.key));
    CHECK(contents(f.run(second.get(request))) == zip);
    CHECK(f.http.requests.size() == 1);
    CHECK(second.stats().hits == 1);
}

TEST_CASE("archives: an empty stored file is a miss, replaced by the next download", "[archives]") {
    Fixture f;
    const std::string zip = zip_of("terraform-provider-thing", "again");
    ArchiveStore store(f.io.get_executor(), f.http, f.options());
    const ArchiveRequest request = f.provider(kUrl, zip);
    std::ofstream(f.dir / request.key).flush();  // size 0
    CHECK_FALSE(f.run(store.find(request.key)));
    CHECK(contents(f.run(store.get(request))) == zip);
    CHECK(fs::file_size(f.dir / request.key) == zip.size());
    CHECK(f.http.requests.size() == 1);
}

TEST_CASE("archives: a failed download stores nothing", "[archives]") {
    Fixture f;
    ArchiveStore store(f.io.get_executor(), f.http, f.options());
    ArchiveRequest request = f.module("https://git.example/gone.tar.gz", 10);
    f.http.routes[request.url] = [] { return FakeHttpClient::json("{}", 404); };
    CHECK(f.error_of(store.get(request)).code() == ErrorCode::registry_failed);
    f.http.routes.erase(request.url);
    CHECK(f.error_of(store.get(request)).code() == ErrorCode::registry_failed);
    CHECK(files_in(f.dir / "modules") == 0);
    CHECK(files_in(f.dir / "tmp") == 0);
    CHECK(store.stats().failures == 2);
}

TEST_CASE("archives: once stopped, no download starts; stored archives are still found",
          "[archives]") {
    Fixture f;
    const std::string zip = zip_of("terraform-provider-thing", "stopping");
    ArchiveStore store(f.io.get_executor(), f.http, f.options());
    const ArchiveRequest stored = f.provider(kUrl, zip);
    f.run(store.get(stored));
    store.stop();
    CHECK(contents(f.run(store.get(stored))) == zip);
    const ArchiveRequest missing = f.module("https://git.example/late.tar.gz", 10);
    const Error e = f.error_of(store.get(missing));
    CHECK(e.code() == ErrorCode::internal);
    CHECK_THAT(e.what(), Catch::Contains("stopping"));
    CHECK(f.http.requests.size() == 1);
}

TEST_CASE("archives: a directory that cannot take archives passes them through, said once",
          "[archives]") {
    Fixture f;
    // Where the store's directory should be, a file: nothing can be made there.
    fs::create_directories(f.dir.parent_path().parent_path());
    std::ofstream(f.dir.parent_path()) << "not a directory";
    ArchiveStore store(f.io.get_executor(), f.http, f.options());
    const ArchiveRequest request = f.module("https://git.example/thing.tar.gz", 10);
    const auto unwritable = [&] {
        try {
            f.run(store.get(request));
        } catch (const daemon::archives::StoreUnwritable& e) {
            return std::string(e.what());
        }
        FAIL("get() did not say the store cannot take the archive");
        return std::string();
    };
    CHECK_THAT(unwritable(), Catch::Contains(f.dir.string()));
    const auto stats = store.stats();
    CHECK_THAT(stats.store_problem, Catch::Contains("cannot store archives"));
    CHECK_THAT(stats.store_problem, Catch::Contains("archives are passed through uncached"));
    CHECK(stats.passed_through == 1);
    CHECK(stats.failures == 0);  // nothing failed upstream
    // Within kStoreRetry the next one is passed through without a try.
    unwritable();
    CHECK(store.stats().passed_through == 2);
    CHECK(f.http.requests.empty());
}

TEST_CASE("archives: a failed download is not the store's problem", "[archives]") {
    Fixture f;
    ArchiveStore store(f.io.get_executor(), f.http, f.options());
    ArchiveRequest request = f.module("https://git.example/broken.tar.gz", 10);
    f.http.routes[request.url] = [] { return FakeHttpClient::json("{}", 502); };
    const Error e = f.error_of(store.get(request));
    CHECK(e.code() == ErrorCode::registry_failed);
    CHECK(store.stats().store_problem.empty());
    CHECK(store.stats().passed_through == 0);
}

TEST_CASE("archives: a download the disk has no room for says the directory is full",
          "[archives]") {
    Fixture f;
    ArchiveStore store(f.io.get_executor(), f.http, f.options());
    const ArchiveRequest request = f.module("https://git.example/huge.tar.gz", 10);
    // As the libcurl client fails a write of the body: the message, and the errno beside it.
    f.http.routes[request.url] = []() -> HttpResponse {
        throw daemon::http::HttpError(std::string("writing the download: ") + std::strerror(ENOSPC),
                                      ENOSPC);
    };
    int error = 0;
    try {
        f.run(store.get(request));
    } catch (const daemon::archives::StoreUnwritable& e) {
        error = e.error();
        CHECK_THAT(e.what(), Catch::Contains("writing the download: "));
    }
    CHECK(error == ENOSPC);
    const auto stats = store.stats();
    CHECK_THAT(stats.store_problem, Catch::Contains("the cache directory is full"));
    CHECK(stats.passed_through == 1);
    CHECK(stats.failures == 0);
    CHECK(files_in(f.dir / "tmp") == 0);
}

TEST_CASE("archives: the registry's token goes to its own origin only, never along a redirect",
          "[archives]") {
    Fixture f;
    ArchiveStore store(f.io.get_executor(), f.http, f.options());
    const auto with_token = [](ArchiveRequest r) {
        r.credentials.host = "r.example";
        r.credentials.origin = "https://r.example/";
        r.credentials.token.emplace("T");
        return r;
    };
    const ArchiveRequest same = with_token(f.module("https://r.example/files/a.tar.gz", 10));
    const ArchiveRequest other = with_token(f.module("https://cdn.example/b.tar.gz", 10));
    const ArchiveRequest moved = with_token(f.module("https://r.example/moved/c.tar.gz", 10));
    f.http.routes[moved.url] = [] { return FakeHttpClient::redirect("https://cdn.example/c"); };
    f.http.routes["https://cdn.example/c"] = [] { return FakeHttpClient::json("{}"); };
    f.run(store.get(same));
    f.run(store.get(other));
    f.run(store.get(moved));
    REQUIRE(f.http.requests.size() == 4);
    CHECK(f.http.requests[0].bearer == "T");
    CHECK_FALSE(f.http.requests[1].bearer.has_value());
    CHECK(f.http.requests[2].bearer == "T");
    CHECK(f.http.requests[3].url == "https://cdn.example/c");
    CHECK_FALSE(f.http.requests[3].bearer.has_value());
}

TEST_CASE("archives: a refusal on the registry's origin says whether its token went, and why not",
          "[archives]") {
    Fixture f;
    ArchiveStore store(f.io.get_executor(), f.http, f.options());
    ArchiveRequest request = f.module("https://r.example/files/a.tar.gz", 10);
    f.http.routes[request.url] = [] { return FakeHttpClient::json("{}", 401); };
    request.credentials.host = "r.example";
    request.credentials.origin = "https://r.example/";
    request.credentials.token.emplace("T");
    CHECK_THAT(f.error_of(store.get(request)).what(),
               Catch::Contains("https://r.example/files/a.tar.gz: HTTP status 401 with the "
                               "credentials stored for r.example"));

    // The keyring could not give it (locked): the download went without it.
    request.credentials.token.reset();
    request.credentials.keyring_problem = "the keyring is locked";
    const Error locked = f.error_of(store.get(request));
    CHECK_THAT(locked.what(), Catch::Contains("HTTP status 401; the credentials stored for "
                                              "r.example could not be read from the keyring"));
    CHECK_THAT(locked.what(), Catch::Contains("the keyring is locked"));
    CHECK_FALSE(f.http.requests.back().bearer.has_value());

    request.credentials.keyring_problem.clear();
    CHECK_THAT(f.error_of(store.get(request)).what(),
               Catch::Contains("; no credentials are stored for r.example"));

    // On another origin, a refusal is that origin's: nothing said of the token.
    ArchiveRequest elsewhere = f.module("https://cdn.example/x.tar.gz", 10);
    f.http.routes[elsewhere.url] = [] { return FakeHttpClient::json("{}", 403); };
    elsewhere.credentials = request.credentials;
    const std::string message = f.error_of(store.get(elsewhere)).what();
    CHECK_THAT(message, Catch::EndsWith("https://cdn.example/x.tar.gz: HTTP status 403"));
}

}  // namespace test_archive_store
