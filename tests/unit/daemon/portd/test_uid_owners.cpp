#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "daemon/portd/owner_files.hpp"
#include "daemon/portd/port_budgets.hpp"
#include "daemon/portd/uid_owners.hpp"
#include "scratch_dir.hpp"

namespace test_uid_owners {

namespace fs = std::filesystem;
using namespace hostkeeper::daemon::portd;

namespace {

// An account database of a few users.
struct FakeAccounts : Accounts {
    std::map<std::string, uid_t> users{{"root", 0}, {"alice", 1000}, {"mallory", 1001}};
    std::set<uid_t> extra_uids;  // passwd entries of no listed name
    std::optional<uid_t> uid_of_name(const std::string& name) override {
        const auto found = users.find(name);
        if (found == users.end()) return std::nullopt;
        return found->second;
    }
    bool has_passwd_entry(uid_t uid) override {
        if (extra_uids.count(uid) != 0) return true;
        for (const auto& [name, id] : users)
            if (id == uid) return true;
        return false;
    }
};

UidOwners owners_of(const std::string& subuid, uid_t sub_uid_min = kDefaultSubUidMin) {
    return UidOwners(parse_subordinate_ranges(subuid), sub_uid_min);
}

}  // namespace

TEST_CASE("parse_subordinate_ranges reads NAME:FIRST:COUNT and UID:FIRST:COUNT lines") {
    const SubordinateRanges read = parse_subordinate_ranges(
        "alice:100000:65536\n"
        "\n"
        "# a comment\n"
        "1001:165536:65536\n"
        "last:4294901760:65535");
    REQUIRE(read.ranges.size() == 3);
    CHECK(read.ignored_lines == 0);
    CHECK(read.ranges[0].owner == "alice");
    CHECK(read.ranges[0].first == 100000);
    CHECK(read.ranges[0].count == 65536);
    CHECK(read.ranges[1].owner == "1001");
    CHECK(read.ranges[2].first == 4294901760U);
    CHECK(read.ranges[2].count == 65535);
}

TEST_CASE("parse_subordinate_ranges skips malformed lines and counts them") {
    const SubordinateRanges read = parse_subordinate_ranges(
        "alice:100000\n"              // two fields
        "alice:x:65536\n"             // not a number
        "alice:-1:65536\n"            // a sign
        "alice:100000:0\n"            // empty range
        ":100000:65536\n"             // no owner
        "alice:100000:65536:extra\n"  // four fields
        "alice:4294901760:65536\n"    // reaches the invalid uid (uid_t)-1
        "alice:99999999999:1\n"       // over 32 bits
        "al\x01ice:100000:65536\n"    // a control character
        "alice: 100000:65536\n"       // a blank in a number
        "bob:300000:10\n");
    CHECK(read.ignored_lines == 10);
    REQUIRE(read.ranges.size() == 1);
    CHECK(read.ranges[0].owner == "bob");
}

TEST_CASE("parse_sub_uid_min takes login.defs' last valid SUB_UID_MIN, else 100000") {
    CHECK(parse_sub_uid_min("") == 100000);
    CHECK(parse_sub_uid_min("# SUB_UID_MIN 5\nUID_MIN 1000\n") == 100000);
    CHECK(parse_sub_uid_min("SUB_UID_MIN\t\t   200000\n") == 200000);
    CHECK(parse_sub_uid_min("SUB_UID_MIN 200000\nSUB_UID_MIN 300000\n") == 300000);
    CHECK(parse_sub_uid_min("SUB_UID_MIN 300000\nSUB_UID_MIN junk\n") == 300000);
    CHECK(parse_sub_uid_min("SUB_UID_MINX 5\nSUB_UID_MIN \"400000\"\r\n") == 400000);
    CHECK(parse_sub_uid_min("SUB_UID_MIN 4294967295\n") == 100000);
}

TEST_CASE("a subordinate uid counts against its range's owner, named or numbered") {
    FakeAccounts accounts;
    const UidOwners owners = owners_of("alice:100000:65536\n1001:165536:65536\n");
    CHECK(owners.holder_of(100000, accounts) == BudgetHolder::user(1000));
    CHECK(owners.holder_of(165535, accounts) == BudgetHolder::user(1000));
    CHECK(owners.holder_of(165536, accounts) == BudgetHolder::user(1001));
    CHECK(owners.holder_of(231071, accounts) == BudgetHolder::user(1001));
    // The owners themselves, and uids below SUB_UID_MIN, are their own.
    CHECK(owners.holder_of(1000, accounts) == BudgetHolder::user(1000));
    CHECK(owners.holder_of(1001, accounts) == BudgetHolder::user(1001));
    CHECK(owners.holder_of(5000, accounts) == BudgetHolder::user(5000));
    CHECK(owners.holder_of(0, accounts) == BudgetHolder::user(0));
}

TEST_CASE("unlisted uids from SUB_UID_MIN without a passwd entry share one budget") {
    FakeAccounts accounts;
    accounts.extra_uids.insert(500000);  // a real account up there (LDAP, say)
    const UidOwners owners = owners_of("alice:100000:65536\n", 200000);
    CHECK(owners.holder_of(231072, accounts) == BudgetHolder::unowned());
    CHECK(owners.holder_of(4294967294U, accounts) == BudgetHolder::unowned());
    CHECK(owners.holder_of(500000, accounts) == BudgetHolder::user(500000));
    // Below SUB_UID_MIN a uid without an entry is still its own.
    CHECK(owners.holder_of(199999, accounts) == BudgetHolder::user(199999));
    CHECK(owners.holder_of(200000, accounts) == BudgetHolder::unowned());
    CHECK(BudgetHolder::unowned().is_unowned());
    CHECK_FALSE(BudgetHolder::user(0).is_unowned());
    CHECK(BudgetHolder::unowned() != BudgetHolder::user(0));
}

TEST_CASE(
    "a range whose owner is nobody is unowned, and the first listed of overlapping ranges wins") {
    FakeAccounts accounts;
    const UidOwners owners = owners_of(
        "ghost:100000:100\n"
        "alice:300000:1000\n"
        "mallory:300500:1000\n"
        "mallory:0:4294967295\n");
    CHECK(owners.holder_of(100050, accounts) == BudgetHolder::unowned());
    CHECK(owners.holder_of(300600, accounts) == BudgetHolder::user(1000));
    CHECK(owners.holder_of(300999, accounts) == BudgetHolder::user(1000));
    CHECK(owners.holder_of(301000, accounts) == BudgetHolder::user(1001));
    // The last line spans everything: every other uid is mallory's.
    CHECK(owners.holder_of(5, accounts) == BudgetHolder::user(1001));
    CHECK(owners.range_of(100050)->owner == "ghost");
    CHECK(owners.range_count() == 4);
}

TEST_CASE("range_of agrees with a plain search over many ranges") {
    std::string text;
    for (uid_t i = 0; i < 200; ++i)
        text += "u" + std::to_string(i) + ":" + std::to_string(100000 + i * 1000) + ":" +
                std::to_string(i % 3 == 0 ? 2500 : 700) + "\n";
    const SubordinateRanges read = parse_subordinate_ranges(text);
    const UidOwners owners(read, kDefaultSubUidMin);
    for (uid_t uid = 99000; uid < 100000 + 201 * 1000; uid += 37) {
        const SubordinateRange* expected = nullptr;
        for (const SubordinateRange& r : read.ranges) {
            if (uid >= r.first && uid - r.first < r.count) {
                expected = &r;
                break;
            }
        }
        const SubordinateRange* found = owners.range_of(uid);
        REQUIRE((found == nullptr) == (expected == nullptr));
        if (found != nullptr) CHECK(found->owner == expected->owner);
    }
}

namespace {

// A directory of its own, for the files.
struct Scratch : hostkeeper::test::ScratchDir {
    Scratch() : ScratchDir("hk-uid-owners") {}
    // Written aside and renamed into place, as shadow's tools do.
    void write(const std::string& name, const std::string& text) const {
        const fs::path aside = dir / (name + "+");
        std::ofstream(aside) << text;
        fs::rename(aside, dir / name);
    }
};

}  // namespace

TEST_CASE("OwnerFiles reads the files, and reads them again when they change") {
    Scratch s;
    OwnerFiles files(OwnerFiles::Paths{(s.dir / "subuid").string(), (s.dir / "login.defs").string(),
                                       (s.dir / "passwd").string()});
    // No files: no ranges, SUB_UID_MIN 100000. root has a passwd entry
    // everywhere; uid 4294967290 has none on a test machine.
    CHECK(files.holder_of(4294967290U) == BudgetHolder::unowned());
    CHECK(files.holder_of(0) == BudgetHolder::user(0));

    s.write("subuid", "root:4294960000:100\n");
    CHECK(files.holder_of(4294960050U) == BudgetHolder::user(0));
    CHECK(files.holder_of(4294960100U) == BudgetHolder::unowned());

    s.write("subuid", "0:4294960100:10\n");
    CHECK(files.holder_of(4294960050U) == BudgetHolder::unowned());
    CHECK(files.holder_of(4294960105U) == BudgetHolder::user(0));

    // SUB_UID_MIN raised above an unlisted uid without an entry: its own.
    s.write("login.defs", "SUB_UID_MIN 4294967291\n");
    CHECK(files.holder_of(4294967290U) == BudgetHolder::user(4294967290U));
}

TEST_CASE("40 subordinate uids of one user fill their owner's budgets only, not a victim's") {
    Scratch s;
    s.write("subuid", "root:4294900000:1000\n");
    const PortLimits limits;
    PortBudgets budgets(
        limits, OwnerFiles::Paths{(s.dir / "subuid").string(), (s.dir / "login.defs").string(),
                                  (s.dir / "passwd").string()});
    std::vector<Budget::Slot> held;
    std::size_t greetings = 0;
    for (uid_t uid = 4294900000U; uid < 4294900040U; ++uid) {
        const BudgetHolder holder = budgets.holder_of(uid);
        CHECK(holder == BudgetHolder::user(0));
        for (int i = 0; i < 16; ++i)
            if (Budget::Slot slot = budgets.waiting.take(holder)) held.push_back(std::move(slot));
        for (int i = 0; i < 8; ++i) {
            if (Budget::Slot slot = budgets.greetings.take(holder)) {
                held.push_back(std::move(slot));
                ++greetings;
            }
        }
    }
    CHECK(held.size() == limits.pending_per_user + limits.greetings_per_user);
    CHECK(greetings == limits.greetings_per_user);
    // Unlisted uids without an entry: one more holder, whatever their number.
    for (uid_t uid = 4294950000U; uid < 4294950040U; ++uid)
        if (Budget::Slot slot = budgets.greetings.take(budgets.holder_of(uid)))
            held.push_back(std::move(slot));
    CHECK(budgets.greetings.used() == 2 * limits.greetings_per_user);
    const BudgetHolder victim = budgets.holder_of(getuid() == 0 ? 1 : getuid());
    CHECK(budgets.waiting.take(victim));
    CHECK(budgets.greetings.take(victim));
    CHECK(budgets.registrations.take(victim));
    CHECK(budgets.queued.take(victim));
}

}  // namespace test_uid_owners
