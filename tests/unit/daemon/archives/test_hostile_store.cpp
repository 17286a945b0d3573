// A shared archive directory against the other members of its group: what
// they can put under a key (a FIFO, a symbolic link, a huge sparse file),
// under the lock file's name, in place of a subdirectory or of this user's
// temp directory, and the owners a store accepts. Each answer is a miss, a
// refusal or a file left alone; none waits. A directory under a package's
// name is removed or moved aside, and a verified download that cannot be
// stored is served whole all the same; sparse files count what they hold;
// a bad package refused by several readers at once counts once.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daemon/archives/archive_store.hpp"
#include "daemon/archives/package_hash.hpp"
#include "daemon/archives/shared_store.hpp"
#include "daemon/archives/verified_download.hpp"
#include "fake_http_client.hpp"
#include "run_awaitable.hpp"

namespace test_hostile_store {

using namespace hostkeeper;
using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace fs = std::filesystem;
using daemon::archives::Archive;
using daemon::archives::ArchiveRequest;
using daemon::archives::ArchiveStore;
using daemon::archives::ArchiveStoreOptions;
using daemon::archives::StoreLocks;

namespace {

constexpr uid_t kOtherUid = 54321;  // a group member who is not us

mode_t mode_of(const fs::path& path) {
    struct stat st {};
    REQUIRE(::lstat(path.c_str(), &st) == 0);
    return st.st_mode & 07777U;
}

uid_t owner_of(const fs::path& path) {
    struct stat st {};
    REQUIRE(::lstat(path.c_str(), &st) == 0);
    return st.st_uid;
}

// Giving a file to another uid needs root: without it, false and a warning
// that the test was skipped.
bool may_give_away() {
    if (::geteuid() == 0) return true;
    WARN("skipped: giving a file to another uid needs root");
    return false;
}

// A shared directory (2770) under a temp root, and a store on it.
struct SharedWorld {
    SharedWorld() {
        char pattern[] = "/tmp/hk-hostile-XXXXXX";
        root = ::mkdtemp(pattern);
        dir = root / "shared";
        fs::create_directory(dir);
        REQUIRE(::chmod(dir.c_str(), 02770) == 0);
        options.dir = dir;
        options.fetch_timeout = 10s;
        http.routes["https://cdn.example/p.zip"] = [zip = zip] {
            daemon::http::HttpResponse r;
            r.status = 200;
            r.body = zip;
            return r;
        };
        provider.key = "providers/" + daemon::archives::sha256_hex(zip);
        provider.url = "https://cdn.example/p.zip";
        provider.published = {"zh:" + daemon::archives::sha256_hex(zip)};
        provider.what = "provider acme/thing";
    }
    ~SharedWorld() { fs::remove_all(root); }
    SharedWorld(const SharedWorld&) = delete;
    SharedWorld& operator=(const SharedWorld&) = delete;

    fs::path own_tmp() const { return dir / "tmp" / std::to_string(::geteuid()); }

    // A module archive (nothing published) with `body`, served at `url`.
    ArchiveRequest module(const std::string& url, const std::string& body) {
        http.routes[url] = [body] {
            daemon::http::HttpResponse r;
            r.status = 200;
            r.body = body;
            return r;
        };
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
    test::FakeHttpClient http{io.get_executor()};
    ArchiveStoreOptions options;
    const std::string zip = "PK\x05\x06" + std::string(18, '\0');  // an empty zip archive
    ArchiveRequest provider;
};

// get() of `w`'s provider, returned with half of it downloaded, held there.
Archive got_midway(SharedWorld& w, ArchiveStore& store) {
    w.http.hold_midway();
    std::optional<Archive> slot;
    asio::co_spawn(w.io, store.get(w.provider), [&slot](const std::exception_ptr& e, Archive a) {
        if (!e) slot = std::move(a);
    });
    w.io.poll();
    REQUIRE(slot);
    REQUIRE(slot->growing);
    return std::move(*slot);
}

// The rest of a download held midway.
void run_rest(SharedWorld& w) {
    w.http.release();
    w.io.restart();
    w.io.run();
}

// Everything the archive's descriptor reads, from offset 0.
std::string read_whole(const Archive& archive) {
    std::string out;
    std::string piece(4096, '\0');
    for (off_t at = 0;;) {
        const ssize_t n = ::pread(archive.fd.get(), piece.data(), piece.size(), at);
        REQUIRE(n >= 0);
        if (n == 0) return out;
        out.append(piece, 0, static_cast<std::size_t>(n));
        at += n;
    }
}

// A followed download ended whole, not failed.
bool ended_whole(const Archive& archive) {
    return !archive.growing || (archive.growing->whole() && !archive.growing->error());
}

// The entries of `dir` moved aside (NAME.moved-aside.PID.N).
std::vector<fs::path> moved_aside(const fs::path& dir) {
    std::vector<fs::path> out;
    for (const auto& entry : fs::directory_iterator(dir)) {
        if (entry.path().filename().string().find(".moved-aside.") != std::string::npos)
            out.push_back(entry.path());
    }
    return out;
}

}  // namespace

TEST_CASE("hostile store: a FIFO under a key is a miss at once, and removed",
          "[archives][hostile]") {
    SharedWorld w;
    ArchiveStore store(w.io.get_executor(), w.http, w.options);
    REQUIRE(store.stats().store_problem.empty());
    const fs::path fifo = w.dir / w.provider.key;
    REQUIRE(::mkfifo(fifo.c_str(), 0440) == 0);
    CHECK_FALSE(test::run_until_idle(w.io, store.find(w.provider.key)));
    CHECK(store.stats().rejected == 1);
    CHECK_FALSE(fs::exists(fs::symlink_status(fifo)));
    // A module of our own: the same.
    const std::string module_key = daemon::archives::module_archive_key("https://git.example/m");
    const fs::path module = w.dir / "modules" / std::to_string(::geteuid()) / module_key.substr(8);
    REQUIRE(::mkfifo(module.c_str(), 0400) == 0);
    CHECK_FALSE(test::run_until_idle(w.io, store.find(module_key)));
}

TEST_CASE("hostile store: a symbolic link under a key is never followed", "[archives][hostile]") {
    SharedWorld w;
    ArchiveStore store(w.io.get_executor(), w.http, w.options);
    const fs::path victim = w.root / "victim.zip";
    std::ofstream(victim) << w.zip;
    fs::create_symlink(victim, w.dir / w.provider.key);
    CHECK_FALSE(test::run_until_idle(w.io, store.find(w.provider.key)));
    CHECK(fs::exists(victim));
    // The download replaces it with a file of its own.
    const Archive got = test::run_until_idle(w.io, store.get(w.provider));
    CHECK(got.size == w.zip.size());
    CHECK(fs::is_regular_file(fs::symlink_status(w.dir / w.provider.key)));
    CHECK(mode_of(victim) != 0440U);
}

TEST_CASE("hostile store: a huge sparse file is a miss, removed and not counted",
          "[archives][hostile]") {
    SharedWorld w;
    const fs::path providers = w.dir / "providers";
    fs::create_directory(providers);
    REQUIRE(::chmod(providers.c_str(), 02770) == 0);
    const fs::path huge = w.dir / w.provider.key;
    { std::ofstream(huge) << "PK"; }
    fs::resize_file(huge, daemon::archives::kMaxPackageSize + 1);
    REQUIRE(::chmod(huge.c_str(), 0440) == 0);
    ArchiveStore store(w.io.get_executor(), w.http, w.options);
    CHECK(store.stats().count == 0);  // left out of the size
    CHECK(store.stats().bytes == 0);
    CHECK_FALSE(test::run_until_idle(w.io, store.find(w.provider.key)));
    CHECK(store.stats().rejected == 1);
    CHECK_FALSE(fs::exists(huge));
}

TEST_CASE("hostile store: subdirectories and the lock file are never reached through a link",
          "[archives][hostile]") {
    SharedWorld w;
    const fs::path elsewhere = w.root / "victim-dir";
    fs::create_directory(elsewhere);
    REQUIRE(::chmod(elsewhere.c_str(), 0700) == 0);
    const fs::path victim_file = w.root / "victim-file";
    std::ofstream(victim_file) << "secret";
    REQUIRE(::chmod(victim_file.c_str(), 0600) == 0);

    SECTION("providers/ a link: the store is refused, the target's mode unchanged") {
        fs::create_directory_symlink(elsewhere, w.dir / "providers");
        ArchiveStore store(w.io.get_executor(), w.http, w.options);
        CHECK_THAT(store.stats().store_problem, Catch::Contains("it is not a directory"));
        CHECK(mode_of(elsewhere) == 0700U);
        CHECK_FALSE(test::run_until_idle(w.io, store.find(w.provider.key)));
    }
    SECTION(".lock a link: locks off, the target neither opened for writing nor changed") {
        fs::create_symlink(victim_file, w.dir / ".lock");
        StoreLocks locks;
        locks.open(w.dir / ".lock", true);
        CHECK_FALSE(locks.enabled());
        CHECK(mode_of(victim_file) == 0600U);
    }
    SECTION(".lock another name of a file: locks off, its mode unchanged") {
        REQUIRE(::link(victim_file.c_str(), (w.dir / ".lock").c_str()) == 0);
        StoreLocks locks;
        locks.open(w.dir / ".lock", true);
        CHECK_FALSE(locks.enabled());
        CHECK(mode_of(victim_file) == 0600U);
    }
    SECTION(".lock a FIFO: locks off, without waiting") {
        REQUIRE(::mkfifo((w.dir / ".lock").c_str(), 0660) == 0);
        StoreLocks locks;
        locks.open(w.dir / ".lock", true);
        CHECK_FALSE(locks.enabled());
    }
    SECTION("the whole directory a link: refused") {
        fs::create_directory_symlink(w.dir, w.root / "link");
        ArchiveStoreOptions options = w.options;
        options.dir = w.root / "link";
        ArchiveStore store(w.io.get_executor(), w.http, options);
        CHECK_THAT(store.stats().store_problem, Catch::Contains("is a symbolic link"));
    }
}

TEST_CASE("hostile store: the sweep removes only our own abandoned temp files",
          "[archives][hostile]") {
    SharedWorld w;
    { ArchiveStore first(w.io.get_executor(), w.http, w.options); }
    REQUIRE(mode_of(w.own_tmp()) == 02700U);
    const auto old = fs::file_time_type::clock::now() - 2h;
    const auto make_old = [&](const fs::path& path) {
        std::ofstream(path) << "partial";
        fs::last_write_time(path, old);
    };
    make_old(w.own_tmp() / "123-abcDEF");  // ours, abandoned
    make_old(w.own_tmp() / "notes.txt");   // not a name of ours
    SECTION("in our own temp directory") {
        ArchiveStore store(w.io.get_executor(), w.http, w.options);
        CHECK_FALSE(fs::exists(w.own_tmp() / "123-abcDEF"));
        CHECK(fs::exists(w.own_tmp() / "notes.txt"));
    }
    SECTION("a member swapped our temp directory for a link: refused there, never followed") {
        const fs::path victim = w.root / "victim-home";
        fs::create_directory(victim);
        REQUIRE(::chmod(victim.c_str(), 0700) == 0);
        make_old(victim / "456-abcDEF");
        fs::remove_all(w.own_tmp());
        fs::create_directory_symlink(victim, w.own_tmp());
        ArchiveStore store(w.io.get_executor(), w.http, w.options);
        CHECK(fs::exists(victim / "456-abcDEF"));
        CHECK(mode_of(victim) == 0700U);
        // The link was moved aside: downloads go to a directory of ours again.
        CHECK(fs::is_directory(fs::symlink_status(w.own_tmp())));
        CHECK(test::run_until_idle(w.io, store.get(w.provider)).size == w.zip.size());
        CHECK(fs::exists(victim / "456-abcDEF"));
    }
}

TEST_CASE("hostile store: owners of the directory and of our subdirectories",
          "[archives][hostile]") {
    if (!may_give_away()) return;
    SharedWorld w;
    SECTION("a squatted modules/<uid> is moved aside, not a refusal") {
        const fs::path squat = w.dir / "modules" / std::to_string(::geteuid());
        fs::create_directories(squat);
        REQUIRE(::chmod((w.dir / "modules").c_str(), 02770) == 0);
        REQUIRE(::chown(squat.c_str(), kOtherUid, static_cast<gid_t>(-1)) == 0);
        ArchiveStore store(w.io.get_executor(), w.http, w.options);
        CHECK(store.stats().store_problem.empty());
        CHECK(owner_of(squat) == ::geteuid());
        CHECK(mode_of(squat) == 02750U);
    }
    SECTION("a shared directory of another member's is refused") {
        REQUIRE(::chown(w.dir.c_str(), kOtherUid, static_cast<gid_t>(-1)) == 0);
        REQUIRE(::chmod(w.dir.c_str(), 02770) == 0);  // chown cleared setgid
        ArchiveStore store(w.io.get_executor(), w.http, w.options);
        CHECK_THAT(store.stats().store_problem, Catch::Contains("belongs to uid 54321") &&
                                                    Catch::Contains("belongs to root or to you"));
    }
}

TEST_CASE("hostile store: module archives are their owner's only", "[archives][hostile]") {
    SharedWorld w;
    ArchiveStore store(w.io.get_executor(), w.http, w.options);
    const ArchiveRequest module = w.module("https://git.example/m.tar.gz", "module");
    test::run_until_idle(w.io, store.get(module));
    CHECK(mode_of(w.dir / "modules" / std::to_string(::geteuid()) / module.key.substr(8)) == 0400U);
    test::run_until_idle(w.io, store.get(w.provider));
    CHECK(mode_of(w.dir / w.provider.key) == 0440U);
}

TEST_CASE("hostile store: another member's package is served from our own copy",
          "[archives][hostile]") {
    if (!may_give_away()) return;
    SharedWorld w;
    const fs::path key_file = w.dir / w.provider.key;
    {
        ArchiveStore theirs(w.io.get_executor(), w.http, w.options);
        test::run_until_idle(w.io, theirs.get(w.provider));
    }
    // Their file: they could make it writable and rewrite it while it is sent.
    REQUIRE(::chown(key_file.c_str(), kOtherUid, static_cast<gid_t>(-1)) == 0);
    REQUIRE(::chmod(key_file.c_str(), 0440) == 0);
    struct stat before {};
    REQUIRE(::lstat(key_file.c_str(), &before) == 0);

    ArchiveStore store(w.io.get_executor(), w.http, w.options);
    const std::optional<Archive> hit = test::run_until_idle(w.io, store.find(w.provider.key));
    REQUIRE(hit);
    struct stat served {};
    REQUIRE(::fstat(hit->fd.get(), &served) == 0);
    CHECK(served.st_uid == ::geteuid());
    CHECK(served.st_ino != before.st_ino);
    CHECK(static_cast<std::size_t>(served.st_size) == w.zip.size());
    // The name now holds our copy, sealed; the temp directory is empty again.
    struct stat now {};
    REQUIRE(::lstat(key_file.c_str(), &now) == 0);
    CHECK(now.st_ino == served.st_ino);
    CHECK(now.st_uid == ::geteuid());
    CHECK((now.st_mode & 07777U) == 0440U);
    CHECK(fs::is_empty(w.own_tmp()));
    CHECK(store.stats().rejected == 0);
    CHECK(w.http.requests.size() == 1);

    // Another member's file that does not match: refused, removed, no copy left.
    REQUIRE(::unlink(key_file.c_str()) == 0);
    std::ofstream(key_file) << "PK tampered";
    REQUIRE(::chown(key_file.c_str(), kOtherUid, static_cast<gid_t>(-1)) == 0);
    REQUIRE(::chmod(key_file.c_str(), 0440) == 0);
    CHECK_FALSE(test::run_until_idle(w.io, store.find(w.provider.key)));
    CHECK(store.stats().rejected == 1);
    CHECK_FALSE(fs::exists(key_file));
    CHECK(fs::is_empty(w.own_tmp()));
}

TEST_CASE("hostile store: another member's rewritten package two readers opened is refused once",
          "[archives][hostile]") {
    if (!may_give_away()) return;
    SharedWorld w;
    const fs::path key_file = w.dir / w.provider.key;
    const auto tamper = [&](const std::string& bytes) {
        std::ofstream(key_file) << bytes;
        REQUIRE(::chown(key_file.c_str(), kOtherUid, static_cast<gid_t>(-1)) == 0);
        REQUIRE(::chmod(key_file.c_str(), 0440) == 0);
    };
    ArchiveStore store(w.io.get_executor(), w.http, w.options);  // makes providers/
    tamper("PK tampered");

    // Both open it before either copy is hashed (a prefetch and Terraform's
    // own request): each refuses it, and it counts once.
    int refused = 0;
    for (int reader = 0; reader < 2; ++reader) {
        asio::co_spawn(w.io, store.find(w.provider.key),
                       [&](const std::exception_ptr& e, const std::optional<Archive>& found) {
                           if (!e && !found) ++refused;
                       });
    }
    w.io.run();
    CHECK(refused == 2);
    CHECK(store.stats().rejected == 1);
    CHECK_FALSE(fs::exists(key_file));
    CHECK(fs::is_empty(w.own_tmp()));

    // Another file put under the name later is another refusal.
    tamper("PK tampered again");
    CHECK_FALSE(test::run_until_idle(w.io, store.find(w.provider.key)));
    CHECK(store.stats().rejected == 2);
}

TEST_CASE("hostile store: a directory under a package's name is moved out of the download's way",
          "[archives][hostile]") {
    SharedWorld w;
    ArchiveStore store(w.io.get_executor(), w.http, w.options);
    const fs::path name = w.dir / w.provider.key;
    SECTION("an empty one, made before the lookup: removed") {
        fs::create_directory(name);
        const Archive got = test::run_until_idle(w.io, store.get(w.provider));
        CHECK(ended_whole(got));
        CHECK(read_whole(got) == w.zip);
        CHECK(moved_aside(w.dir / "providers").empty());
    }
    SECTION("one with a file in it: moved aside, its contents untouched") {
        fs::create_directory(name);
        std::ofstream(name / "theirs") << "kept";
        const Archive got = test::run_until_idle(w.io, store.get(w.provider));
        CHECK(ended_whole(got));
        CHECK(read_whole(got) == w.zip);
        const std::vector<fs::path> aside = moved_aside(w.dir / "providers");
        REQUIRE(aside.size() == 1);
        CHECK(fs::exists(aside.front() / "theirs"));
    }
    SECTION("one made while the package downloads, after the lookup") {
        const Archive got = got_midway(w, store);
        fs::create_directory(name);
        std::ofstream(name / "theirs") << "kept";
        run_rest(w);
        CHECK(ended_whole(got));
        CHECK(read_whole(got) == w.zip);
        CHECK(moved_aside(w.dir / "providers").size() == 1);
    }
    // Stored under its name, and served from there next time.
    CHECK(fs::is_regular_file(fs::symlink_status(name)));
    CHECK(mode_of(name) == 0440U);
    CHECK(store.stats().downloads == 1);
    CHECK(store.stats().passed_through == 0);
    const std::optional<Archive> hit = test::run_until_idle(w.io, store.find(w.provider.key));
    REQUIRE(hit);
    CHECK(read_whole(*hit) == w.zip);
}

TEST_CASE("hostile store: a verified download that cannot be stored is served whole, not kept",
          "[archives][hostile]") {
    SharedWorld w;
    ArchiveStore store(w.io.get_executor(), w.http, w.options);
    const Archive got = got_midway(w, store);
    // The directory it was to be stored in removed: it cannot be renamed into place.
    fs::remove_all(w.dir / "providers");
    run_rest(w);
    CHECK(ended_whole(got));
    CHECK(read_whole(got) == w.zip);
    const auto stats = store.stats();
    CHECK(stats.passed_through == 1);
    CHECK_THAT(stats.store_problem, Catch::Contains("cannot store"));
    CHECK(stats.failures == 0);
    CHECK(stats.downloads == 0);
    CHECK(fs::is_empty(w.own_tmp()));
}

TEST_CASE("hostile store: the cap counts the disk a file takes, not its length",
          "[archives][hostile]") {
    SharedWorld w;
    w.options.max_bytes = std::size_t{1} << 20;
    // Another member's own module directory (theirs to evict): 25 sparse
    // files of 2 GiB each, a few blocks of disk.
    const fs::path modules = w.dir / "modules";
    fs::create_directory(modules);
    REQUIRE(::chmod(modules.c_str(), 02770) == 0);
    const fs::path theirs = modules / std::to_string(kOtherUid);
    fs::create_directory(theirs);
    for (int i = 0; i < 25; ++i) {
        const fs::path sparse =
            theirs / daemon::archives::sha256_hex("sparse " + std::to_string(i));
        { std::ofstream(sparse) << "PK"; }
        fs::resize_file(sparse, daemon::archives::kMaxPackageSize);
    }
    if (::geteuid() == 0) REQUIRE(::chown(theirs.c_str(), kOtherUid, static_cast<gid_t>(-1)) == 0);
    ArchiveStore store(w.io.get_executor(), w.http, w.options);
    CHECK(store.stats().count == 25);
    CHECK(store.stats().bytes < w.options.max_bytes);

    // Our package, then a module: the package is not evicted to make room.
    test::run_until_idle(w.io, store.get(w.provider));
    test::run_until_idle(
        w.io, store.get(w.module("https://git.example/m.tar.gz", std::string(5000, 'm'))));
    CHECK(fs::exists(w.dir / w.provider.key));
    CHECK(store.stats().evictions == 0);
    CHECK(store.stats().count == 27);
    CHECK(store.stats().bytes < w.options.max_bytes);
}

}  // namespace test_hostile_store
