// registry-cache.json as hostkeeperd reads it: the documented schema and
// nothing else (each wrong key named), hosts normalized and deduplicated, and
// a file others may read refused (it names the files the daemon rewrites).
// The file holds no secret; an older one's "capability" is read and ignored.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "daemon/registry_cache/cache_config.hpp"
#include "proto/json.hpp"

namespace test_cache_config {

using namespace hostkeeper::daemon::registry_cache;
namespace fs = std::filesystem;

namespace {

// What setups wrote when every listener URL carried one.
const std::string kOldCapability = "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_AbCd";

struct Fields {
    std::string version = "1";
    std::string listen;      // a file of an older setup has one: "127.0.0.1:PORT"
    std::string capability;  // a file of an older setup has one
    std::string tfrc_files = R"(["/home/u/.terraform.d/hostkeeper.tfrc"])";
    std::string hosts =
        R"(["Registry.Example.COM", "registry.example.com:443", "b.example.com:8443"])";
    std::string extra;
    std::string text() const {
        return R"({"version": )" + version +
               (listen.empty() ? std::string() : R"(, "listen": )" + listen) +
               (capability.empty() ? std::string() : R"(, "capability": )" + capability) +
               R"(, "tfrc_files": )" + tfrc_files + R"(, "hosts": )" + hosts + extra + "}";
    }
};

std::string error_of(const Fields& fields) {
    try {
        (void)parse_cache_config(fields.text());
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "accepted";
}

struct TempDir {
    TempDir() {
        std::string pattern = (fs::temp_directory_path() / "hk-cache-config-XXXXXX").string();
        path = ::mkdtemp(pattern.data());
    }
    ~TempDir() { fs::remove_all(path); }
    fs::path path;
};

}  // namespace

TEST_CASE("cache config: a good file", "[registry_cache]") {
    const CacheConfig config = parse_cache_config(Fields{}.text());
    REQUIRE(config.tfrc_files.size() == 1);
    CHECK(config.tfrc_files[0] == "/home/u/.terraform.d/hostkeeper.tfrc");
    // Normalized (lowercase, :443 dropped) and deduplicated, in order.
    CHECK(config.hosts == std::vector<std::string>{"registry.example.com", "b.example.com:8443"});
    CHECK(listen_address(585) == "127.0.0.1:585");
    // The listener's URLs carry no secret segment.
    CHECK(base_url(585) == "http://127.0.0.1:585/");
}

TEST_CASE("cache config: an older setup's port and capability are read and ignored",
          "[registry_cache]") {
    Fields older;
    older.listen = R"("127.0.0.1:47123")";
    older.capability = "\"" + kOldCapability + "\"";
    const CacheConfig config = parse_cache_config(older.text());
    CHECK(config.hosts == parse_cache_config(Fields{}.text()).hosts);
    CHECK(config.tfrc_files == parse_cache_config(Fields{}.text()).tfrc_files);
    // Any string is ignored (older setups wrote base64url; nothing checks it now).
    older.capability = R"("short")";
    CHECK_NOTHROW(parse_cache_config(older.text()));
}

TEST_CASE("cache config: each wrong key is refused, naming it", "[registry_cache]") {
    struct Case {
        const char* what;
        Fields fields;
        const char* message;
    };
    std::vector<Case> cases;
    auto add = [&](const char* what, auto change, const char* message) {
        Fields f;
        change(f);
        cases.push_back({what, f, message});
    };
    add(
        "version 2", [](Fields& f) { f.version = "2"; }, "\"version\" must be 1");
    add(
        "version string", [](Fields& f) { f.version = "\"1\""; }, "\"version\"");
    add(
        "listen not a string", [](Fields& f) { f.listen = "47123"; }, "\"listen\"");
    add(
        "capability not a string", [](Fields& f) { f.capability = "42"; }, "\"capability\"");
    add(
        "relative tfrc path", [](Fields& f) { f.tfrc_files = R"(["hostkeeper.tfrc"])"; },
        "\"tfrc_files\"");
    add(
        "tfrc path of a directory", [](Fields& f) { f.tfrc_files = R"(["/home/u/"])"; },
        "\"tfrc_files\"");
    add(
        "tfrc path not a string", [](Fields& f) { f.tfrc_files = "[1]"; }, "\"tfrc_files\"");
    add(
        "bad host", [](Fields& f) { f.hosts = R"(["not a host"])"; }, "\"hosts\"");
    add(
        "host with a path", [](Fields& f) { f.hosts = R"(["a.example.com/x"])"; }, "\"hosts\"");
    add(
        "host not a string", [](Fields& f) { f.hosts = "[true]"; }, "\"hosts\"");
    add(
        "unknown key", [](Fields& f) { f.extra = R"(, "proxy_token": "x")"; },
        "unknown key \"proxy_token\"");
    for (const Case& c : cases) {
        INFO(c.what << ": " << c.fields.text());
        const std::string error = error_of(c.fields);
        CHECK_THAT(error, Catch::StartsWith("registry-cache.json: "));
        CHECK_THAT(error, Catch::Contains(c.message));
    }
}

TEST_CASE("cache config: missing keys and non-objects are refused", "[registry_cache]") {
    for (const char* key : {"version", "tfrc_files", "hosts"}) {
        auto doc = hostkeeper::proto::parse_json(Fields{}.text());
        doc.erase(key);
        INFO(key);
        CHECK_THROWS_WITH(parse_cache_config(doc.dump()),
                          Catch::Contains(std::string("\"") + key + "\" is missing"));
    }
    CHECK_THROWS_WITH(parse_cache_config("[]"), Catch::Contains("must be a JSON object"));
    CHECK_THROWS_WITH(parse_cache_config("{"), Catch::Contains("not JSON"));
}

TEST_CASE("cache config: load refuses a file others may read; a missing file is off",
          "[registry_cache]") {
    const TempDir dir;
    const fs::path file = dir.path / "registry-cache.json";
    CHECK_FALSE(load_cache_config(file).has_value());

    std::ofstream(file) << Fields{}.text();
    fs::permissions(file, static_cast<fs::perms>(0644), fs::perm_options::replace);
    CHECK_THROWS_WITH(load_cache_config(file), Catch::Contains("readable by others"));
    fs::permissions(file, static_cast<fs::perms>(0640), fs::perm_options::replace);
    CHECK_THROWS_WITH(load_cache_config(file), Catch::Contains("readable by others"));
    fs::permissions(file, static_cast<fs::perms>(0604), fs::perm_options::replace);
    CHECK_THROWS_WITH(load_cache_config(file), Catch::Contains("readable by others"));

    fs::permissions(file, static_cast<fs::perms>(0600), fs::perm_options::replace);
    const std::optional<CacheConfig> loaded = load_cache_config(file);
    REQUIRE(loaded.has_value());
    CHECK(loaded->hosts.size() == 2);
    CHECK(loaded->origin == file);

    // A symlink to it is not the file itself.
    const fs::path link = dir.path / "link.json";
    fs::create_symlink(file, link);
    CHECK_THROWS_WITH(load_cache_config(link), Catch::Contains("not a regular file"));
}

}  // namespace test_cache_config
