#pragma once
// Which login user a uid belongs to, for hostkeeper-portd's budgets: the
// subordinate ranges of /etc/subuid ("NAME:FIRST:COUNT" or
// "UID:FIRST:COUNT" lines) give each range to its owner, and the uids at or
// above SUB_UID_MIN (/etc/login.defs) that are in no range and have no
// passwd entry share one budget. Pure: the files' texts are given, and the
// account database is asked through `Accounts`.

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hostkeeper::daemon::portd {

// Whom a budget belongs to: one login user (all of their subordinate uids
// included), or every unowned subordinate uid together.
class BudgetHolder {
  public:
    static BudgetHolder user(uid_t uid) { return BudgetHolder(uid); }
    static BudgetHolder unowned() { return BudgetHolder(kUnowned); }

    bool is_unowned() const { return key_ == kUnowned; }
    // The login user's uid; meaningless for the unowned holder.
    uid_t uid() const { return static_cast<uid_t>(key_); }
    // A key that tells every holder apart.
    std::uint64_t key() const { return key_; }
    // "uid 1000" or "the unowned subordinate uids", for log lines.
    std::string describe() const;

    bool operator==(const BudgetHolder& other) const { return key_ == other.key_; }
    bool operator!=(const BudgetHolder& other) const { return key_ != other.key_; }

  private:
    static constexpr std::uint64_t kUnowned = std::uint64_t{1} << 32;
    explicit BudgetHolder(std::uint64_t key) : key_(key) {}
    std::uint64_t key_;
};

// SUB_UID_MIN's default (login.defs(5)).
inline constexpr uid_t kDefaultSubUidMin = 100000;

// SUB_UID_MIN of a login.defs text: its last valid setting, else the default.
uid_t parse_sub_uid_min(std::string_view login_defs);

// One line of /etc/subuid: `count` uids from `first`, owned by `owner` (a
// user name, or a uid in decimal).
struct SubordinateRange {
    std::string owner;
    uid_t first = 0;
    std::uint32_t count = 0;  // at least 1; first + count - 1 is a valid uid
};

struct SubordinateRanges {
    std::vector<SubordinateRange> ranges;  // in the file's order
    std::size_t ignored_lines = 0;         // malformed lines, skipped
};

// Reads an /etc/subuid text. Blank lines and lines starting with '#' are
// skipped; a line that is not OWNER:FIRST:COUNT (decimal numbers, COUNT at
// least 1, the range ending below the invalid uid (uid_t)-1) is counted in
// `ignored_lines` and skipped.
SubordinateRanges parse_subordinate_ranges(std::string_view subuid);

// What the mapping asks of the account database.
class Accounts {
  public:
    virtual ~Accounts() = default;
    // The uid of the user named `name`; nullopt when there is none.
    virtual std::optional<uid_t> uid_of_name(const std::string& name) = 0;
    // Whether `uid` has a passwd entry.
    virtual bool has_passwd_entry(uid_t uid) = 0;
};

// The mapping from uids to budget holders.
class UidOwners {
  public:
    UidOwners() = default;
    UidOwners(SubordinateRanges ranges, uid_t sub_uid_min);

    // A uid in a listed range belongs to the range's owner (the first
    // listed range that holds it; an owner named by neither a user nor a
    // number makes the range unowned). A uid at or above SUB_UID_MIN with no
    // passwd entry is unowned. Every other uid is its own login user.
    BudgetHolder holder_of(uid_t uid, Accounts& accounts) const;

    // The listed range that holds `uid`; nullptr for none.
    const SubordinateRange* range_of(uid_t uid) const;

    uid_t sub_uid_min() const { return sub_uid_min_; }
    std::size_t range_count() const { return ranges_.size(); }

  private:
    // Listed ranges by first uid, each remembering its place in the file.
    struct Indexed {
        uid_t first;
        uid_t last;
        std::size_t order;
    };
    std::vector<SubordinateRange> ranges_;
    std::vector<Indexed> by_first_;
    // by_first_[i]'s largest `last` among entries 0..i: the search stops
    // where no earlier range can still reach.
    std::vector<uid_t> reach_;
    uid_t sub_uid_min_ = kDefaultSubUidMin;
};

}  // namespace hostkeeper::daemon::portd
