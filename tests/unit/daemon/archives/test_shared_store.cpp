// A shared archive directory: which modes are accepted and the messages for
// the rest, lock bytes and leases against eviction, verified identities, and
// the store in a shared directory (0440 files, module archives per user, a
// provider rewritten under its key refused and removed, never served). The
// second user's side runs in tests/e2e/registry_cache_shared.sh.
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include "daemon/archives/archive_store.hpp"
#include "daemon/archives/package_hash.hpp"
#include "daemon/archives/shared_store.hpp"
#include "fake_http_client.hpp"
#include "run_awaitable.hpp"

namespace test_shared_store {

using namespace hostkeeper;
using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace fs = std::filesystem;
using daemon::archives::Archive;
using daemon::archives::ArchiveRequest;
using daemon::archives::ArchiveStore;
using daemon::archives::ArchiveStoreOptions;
using daemon::archives::check_store_dir;
using daemon::archives::FileIdentity;
using daemon::archives::identity_of;
using daemon::archives::lock_offset;
using daemon::archives::StoreLocks;
using daemon::archives::StoreMode;
using daemon::archives::VerifiedFiles;

namespace {

bool any_group(gid_t /*gid*/) {
    return true;
}
bool no_group(gid_t /*gid*/) {
    return false;
}

mode_t mode_of(const fs::path& path) {
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    return st.st_mode & 07777U;
}

struct TempDir {
    TempDir() {
        char pattern[] = "/tmp/hk-shared-XXXXXX";
        root = ::mkdtemp(pattern);
    }
    ~TempDir() { fs::remove_all(root); }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    // `name` under root with exactly `mode`.
    fs::path dir(const std::string& name, mode_t mode) const {
        fs::path path = root / name;
        fs::create_directories(path);
        REQUIRE(::chmod(path.c_str(), mode) == 0);
        return path;
    }

    fs::path root;
};

std::string refusal(const fs::path& dir, bool (*in_group)(gid_t)) {
    try {
        check_store_dir(dir, ::geteuid(), in_group);
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "accepted";
}

}  // namespace

TEST_CASE("shared store: private and group directories are accepted, the rest refused",
          "[archives][shared]") {
    const TempDir t;
    CHECK(check_store_dir(t.dir("private", 0700), ::geteuid(), any_group) ==
          StoreMode::private_dir);
    CHECK(check_store_dir(t.dir("group", 02770), ::geteuid(), any_group) == StoreMode::shared_dir);
    CHECK(check_store_dir(t.dir("readable", 02775), ::geteuid(), any_group) ==
          StoreMode::shared_dir);

    const std::string accepted =
        "an archive directory is either private (yours, mode 0700) or "
        "shared by a group";
    CHECK_THAT(
        refusal(t.dir("open", 0777), any_group),
        Catch::Contains("has mode 0777: it is writable by others") && Catch::Contains(accepted));
    CHECK_THAT(refusal(t.dir("sticky", 03770), any_group), Catch::Contains("it is sticky"));
    CHECK_THAT(refusal(t.dir("plain", 0770), any_group), Catch::Contains("it is not setgid"));
    CHECK_THAT(refusal(t.dir("readonly", 02750), any_group),
               Catch::Contains("not readable and writable by its group"));
    CHECK_THAT(refusal(t.dir("others", 02770), no_group), Catch::Contains("is not one of yours"));
    CHECK_THAT(refusal(t.root / "missing", any_group), Catch::Contains("cannot read"));
}

TEST_CASE("shared store: a served archive's lease keeps eviction off its byte",
          "[archives][shared]") {
    const TempDir t;
    const std::string a(64, 'a');
    const std::string b = std::string(63, 'b') + "c";
    CHECK(lock_offset(a) == 0xaaaaaaaaaaaaaaaLL);
    CHECK(lock_offset("000000000000001f" + std::string(48, '0')) == 1);

    StoreLocks locks;
    locks.open(t.root / ".lock", true);
    REQUIRE(locks.enabled());
    CHECK((mode_of(t.root / ".lock") & 0777U) == 0660U);
    std::shared_ptr<void> first;
    std::shared_ptr<void> second;
    REQUIRE(locks.share(a, first));
    REQUIRE(locks.share(a, second));  // readers share
    REQUIRE(first);
    std::shared_ptr<void> evicting;
    CHECK_FALSE(locks.take(a, evicting));  // in use
    CHECK(locks.take(b, evicting));        // another archive's byte
    CHECK(evicting);
    std::shared_ptr<void> reader;
    CHECK_FALSE(locks.share(b, reader));  // being evicted: a miss
    evicting.reset();
    first.reset();
    CHECK_FALSE(locks.take(a, evicting));  // the second reader still holds it
    second.reset();
    CHECK(locks.take(a, evicting));

    StoreLocks off;
    off.open(t.root / "no-such-dir" / ".lock", false);
    CHECK_FALSE(off.enabled());
    std::shared_ptr<void> none;
    CHECK(off.share(a, none));  // locks off: served without a lease
    CHECK_FALSE(none);
}

TEST_CASE("shared store: a verified file is known again until it changes", "[archives][shared]") {
    const TempDir t;
    const fs::path file = t.root / "f";
    std::ofstream(file) << "one";
    struct stat st {};
    REQUIRE(::stat(file.c_str(), &st) == 0);
    VerifiedFiles verified;
    const FileIdentity id = identity_of(st);
    CHECK_FALSE(verified.contains("providers/x", id));
    verified.remember("providers/x", id);
    CHECK(verified.contains("providers/x", id));
    CHECK_FALSE(verified.contains("providers/y", id));  // renamed: another name
    std::ofstream(file) << "two!";
    REQUIRE(::stat(file.c_str(), &st) == 0);
    CHECK_FALSE(verified.contains("providers/x", identity_of(st)));
    verified.forget("providers/x");
    CHECK_FALSE(verified.contains("providers/x", id));
}

TEST_CASE("shared store: files 0440 in the group, modules per user, a rewritten provider refused",
          "[archives][shared]") {
    const TempDir t;
    const fs::path dir = t.dir("shared", 02770);
    asio::io_context io;
    test::FakeHttpClient http{io.get_executor()};
    ArchiveStoreOptions options;
    options.dir = dir;
    options.fetch_timeout = 10s;
    ArchiveStore store(io.get_executor(), http, options);
    CHECK(store.stats().store_problem.empty());
    for (const char* sub : {"providers", "modules", "tmp"}) CHECK(mode_of(dir / sub) == 02770U);
    const fs::path own = dir / "modules" / std::to_string(::geteuid());
    CHECK(mode_of(own) == 02750U);

    const std::string zip = "PK\x05\x06" + std::string(18, '\0');  // an empty zip archive
    const std::string hex = daemon::archives::sha256_hex(zip);
    http.routes["https://cdn.example/p.zip"] = [zip] {
        daemon::http::HttpResponse r;
        r.status = 200;
        r.body = zip;
        return r;
    };
    ArchiveRequest provider;
    provider.key = "providers/" + hex;
    provider.url = "https://cdn.example/p.zip";
    provider.published = {"zh:" + hex};
    provider.what = "provider acme/thing";
    const Archive stored = test::run_until_idle(io, store.get(provider));
    CHECK(mode_of(dir / provider.key) == 0440U);

    http.routes["https://git.example/m.tar.gz"] = [] {
        daemon::http::HttpResponse r;
        r.status = 200;
        r.body = "module";
        return r;
    };
    ArchiveRequest module;
    module.key = daemon::archives::module_archive_key("https://git.example/m.tar.gz");
    module.url = "https://git.example/m.tar.gz";
    module.verify = false;
    module.what = "module acme/thing/aws";
    test::run_until_idle(io, store.get(module));
    CHECK(fs::exists(own / module.key.substr(8)));
    CHECK_FALSE(fs::exists(dir / module.key));

    // Another store (daemon) hashes what it did not store itself, once.
    ArchiveStore other(io.get_executor(), http, options);
    CHECK(test::run_until_idle(io, other.find(provider.key)));
    CHECK(test::run_until_idle(io, other.find(provider.key)));
    CHECK(other.stats().rejected == 0);

    // Someone rewrites the file under the same key: refused and removed.
    fs::remove(dir / provider.key);
    std::ofstream(dir / provider.key) << "not the package";
    REQUIRE(::chmod((dir / provider.key).c_str(), 0440) == 0);
    CHECK_FALSE(test::run_until_idle(io, other.find(provider.key)));
    CHECK(other.stats().rejected == 1);
    CHECK_FALSE(fs::exists(dir / provider.key));
    // ... and the next get downloads it again.
    CHECK(test::run_until_idle(io, other.get(provider)).size == zip.size());
    CHECK(http.requests.size() == 3);

    // A group-writable file is never served.
    REQUIRE(::chmod((dir / provider.key).c_str(), 0460) == 0);
    CHECK_FALSE(test::run_until_idle(io, store.find(provider.key)));
    CHECK(store.stats().rejected == 1);
}

TEST_CASE("shared store: a refused directory says why in stats and serves nothing",
          "[archives][shared]") {
    const TempDir t;
    const fs::path dir = t.dir("open", 0777);
    asio::io_context io;
    test::FakeHttpClient http{io.get_executor()};
    ArchiveStoreOptions options;
    options.dir = dir;
    ArchiveStore store(io.get_executor(), http, options);
    CHECK_THAT(store.stats().store_problem,
               Catch::Contains("has mode 0777: it is writable by others") &&
                   Catch::Contains("archives are passed through uncached"));
    CHECK_FALSE(test::run_until_idle(io, store.find("providers/" + std::string(64, 'a'))));
}

}  // namespace test_shared_store
