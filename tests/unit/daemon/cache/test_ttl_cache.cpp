#include <catch2/catch.hpp>

#include "daemon/cache/ttl_cache.hpp"

namespace test_ttl_cache {

using hostkeeper::daemon::cache::TtlCache;
using namespace std::chrono_literals;
using Cache = TtlCache<int>;
using tp = Cache::time_point;

namespace {
const tp t0{};  // a fake clock: tests pass time explicitly
}

TEST_CASE("entries expire after the sliding lifetime without use", "[daemon][cache]") {
    Cache cache(10);
    cache.put("a", 1, {10s, 100s}, t0);
    REQUIRE(cache.find("a", t0 + 9s) != nullptr);  // use renews: now expires at 19s
    CHECK(cache.find("a", t0 + 18s) != nullptr);   // renews to 28s
    CHECK(cache.find("a", t0 + 28s) == nullptr);   // expired exactly at 28s
    CHECK(cache.size() == 0);                      // and dropped
}

TEST_CASE("the absolute cap wins over renewal", "[daemon][cache]") {
    Cache cache(10);
    cache.put("a", 1, {10s, 25s}, t0);
    for (auto t = 5s; t < 25s; t += 5s) REQUIRE(cache.find("a", t0 + t) != nullptr);
    CHECK(cache.find("a", t0 + 25s) == nullptr);
}

TEST_CASE("a zero lifetime caches nothing and drops the old entry", "[daemon][cache]") {
    Cache cache(10);
    cache.put("a", 1, {10s, 10s}, t0);
    CHECK_FALSE(cache.put("a", 2, {0s, 10s}, t0).has_value());
    CHECK(cache.find("a", t0) == nullptr);
    CHECK_FALSE(cache.put("b", 2, {10s, 0s}, t0).has_value());
    CHECK(cache.size() == 0);
    Cache disabled(0);
    CHECK_FALSE(disabled.put("a", 1, {10s, 10s}, t0).has_value());
}

TEST_CASE("put replaces and reports expiry; purge and next_expiry", "[daemon][cache]") {
    Cache cache(10);
    CHECK(cache.put("a", 1, {10s, 100s}, t0) == t0 + 10s);
    CHECK(cache.put("b", 2, {50s, 20s}, t0) == t0 + 20s);
    cache.put("a", 3, {30s, 100s}, t0);
    REQUIRE(cache.find("a", t0) != nullptr);
    CHECK(*cache.find("a", t0) == 3);
    CHECK(cache.next_expiry() == t0 + 20s);
    CHECK(cache.purge(t0 + 20s) == 1);
    CHECK(cache.size() == 1);
    CHECK(cache.next_expiry() == t0 + 30s);
    CHECK(cache.erase("a"));
    CHECK_FALSE(cache.erase("a"));
    CHECK_FALSE(cache.next_expiry().has_value());
}

TEST_CASE("the size cap evicts the least recently used entry", "[daemon][cache]") {
    Cache cache(3);
    cache.put("a", 1, {100s, 100s}, t0);
    cache.put("b", 2, {100s, 100s}, t0);
    cache.put("c", 3, {100s, 100s}, t0);
    REQUIRE(cache.find("a", t0 + 1s) != nullptr);  // a is now the most recent
    cache.put("d", 4, {100s, 100s}, t0 + 2s);
    CHECK(cache.size() == 3);
    CHECK(cache.evictions() == 1);
    CHECK(cache.find("b", t0 + 3s) == nullptr);  // b was least recently used
    CHECK(cache.find("a", t0 + 3s) != nullptr);
    CHECK(cache.find("c", t0 + 3s) != nullptr);
    CHECK(cache.find("d", t0 + 3s) != nullptr);
    CHECK(cache.clear() == 3);
}

}  // namespace test_ttl_cache
