// /etc/subuid and login.defs as hostkeeper-portd reads them
// (daemon/portd/uid_owners.hpp): any text at all is read without a crash,
// every range kept is well formed, each range's uids are found in a listed
// range, and the owner of a uid is the same whichever way it is asked.
#include <optional>
#include <string>

#include "daemon/portd/uid_owners.hpp"
#include "fuzz_support.hpp"

using namespace hostkeeper;
using daemon::portd::BudgetHolder;
using daemon::portd::SubordinateRange;
using daemon::portd::UidOwners;

namespace {

// An account database of two users, and an entry for every uid ending in 7.
struct FuzzAccounts : daemon::portd::Accounts {
    std::optional<uid_t> uid_of_name(const std::string& name) override {
        if (name == "alice") return 1000;
        if (name == "bob") return 1001;
        return std::nullopt;
    }
    bool has_passwd_entry(uid_t uid) override { return uid % 10 == 7; }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto [subuid, login_defs] = fuzz::split_at_nul(fuzz::text_of(data, size));

    const uid_t sub_uid_min = daemon::portd::parse_sub_uid_min(login_defs);
    fuzz::require(sub_uid_min != static_cast<uid_t>(-1), "SUB_UID_MIN is the invalid uid");
    fuzz::require(daemon::portd::parse_sub_uid_min(login_defs) == sub_uid_min,
                  "parse_sub_uid_min is not a function of its input");

    daemon::portd::SubordinateRanges read = daemon::portd::parse_subordinate_ranges(subuid);
    std::size_t lines = 1;
    for (const char c : subuid) lines += c == '\n' ? 1 : 0;
    fuzz::require(read.ranges.size() + read.ignored_lines <= lines, "more ranges than lines");
    for (const SubordinateRange& r : read.ranges) {
        fuzz::require(r.count >= 1, "an empty range kept");
        fuzz::require(std::uint64_t{r.first} + r.count - 1 < std::uint64_t{0xffffffff},
                      "a range reaching the invalid uid kept");
        fuzz::require(!r.owner.empty() && r.owner.find(':') == std::string::npos,
                      "a range without a plain owner kept");
    }

    FuzzAccounts accounts;
    const UidOwners owners(read, sub_uid_min);
    std::size_t checked = 0;
    for (const SubordinateRange& r : read.ranges) {
        if (++checked > 64) break;
        const uid_t last = r.first + (r.count - 1);
        for (const uid_t uid : {r.first, last, static_cast<uid_t>(r.first + (r.count - 1) / 2)}) {
            const SubordinateRange* found = owners.range_of(uid);
            fuzz::require(found != nullptr, "a listed uid in no range");
            fuzz::require(uid >= found->first && uid - found->first < found->count,
                          "a uid found in a range that does not hold it");
            const BudgetHolder holder = owners.holder_of(uid, accounts);
            const BudgetHolder again = owners.holder_of(uid, accounts);
            fuzz::require(holder == again, "holder_of is not a function of its input");
            if (found->owner == "alice")
                fuzz::require(holder == BudgetHolder::user(1000), "alice's uid is not alice's");
        }
        // Just outside the range: in another listed range, or not listed.
        if (last != static_cast<uid_t>(-2)) {
            const SubordinateRange* next = owners.range_of(last + 1);
            if (next != nullptr)
                fuzz::require(last + 1 >= next->first && last + 1 - next->first < next->count,
                              "the uid past a range found in a range that does not hold it");
        }
    }
    // Unlisted uids: their own below SUB_UID_MIN, else unowned without an entry.
    for (const uid_t uid : {uid_t{0}, uid_t{1000}, sub_uid_min, uid_t{4294967294U}}) {
        if (owners.range_of(uid) != nullptr) continue;
        const BudgetHolder holder = owners.holder_of(uid, accounts);
        if (uid < sub_uid_min || accounts.has_passwd_entry(uid)) {
            fuzz::require(holder == BudgetHolder::user(uid), "an unlisted uid not its own");
        } else {
            fuzz::require(holder.is_unowned(), "an unlisted subordinate uid owned");
        }
    }
    return 0;
}
