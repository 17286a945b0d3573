#include "daemon/portd/uid_owners.hpp"

#include <algorithm>
#include <limits>

namespace hostkeeper::daemon::portd {

namespace {

constexpr uid_t kInvalidUid = std::numeric_limits<uid_t>::max();
// An owner's name longer than this is no user's (useradd allows 32).
constexpr std::size_t kMaxOwnerName = 256;

// A decimal number of at most ten digits that fits in 32 bits.
std::optional<std::uint32_t> decimal(std::string_view text) {
    if (text.empty() || text.size() > 10) return std::nullopt;
    std::uint64_t value = 0;
    for (const char c : text) {
        if (c < '0' || c > '9') return std::nullopt;
        value = value * 10 + static_cast<std::uint64_t>(c - '0');
    }
    if (value > std::numeric_limits<std::uint32_t>::max()) return std::nullopt;
    return static_cast<std::uint32_t>(value);
}

bool blank(char c) {
    return c == ' ' || c == '\t';
}

std::string_view trimmed(std::string_view text) {
    while (!text.empty() && blank(text.front())) text.remove_prefix(1);
    while (!text.empty() && (blank(text.back()) || text.back() == '\r')) text.remove_suffix(1);
    return text;
}

// Calls `each` with every line of `text`, its newline removed.
template <typename Each>
void for_each_line(std::string_view text, Each&& each) {
    while (!text.empty()) {
        const std::size_t newline = text.find('\n');
        each(text.substr(0, newline));
        if (newline == std::string_view::npos) break;
        text.remove_prefix(newline + 1);
    }
}

std::optional<SubordinateRange> range_line(std::string_view line) {
    const std::size_t first_colon = line.find(':');
    if (first_colon == std::string_view::npos) return std::nullopt;
    const std::size_t second_colon = line.find(':', first_colon + 1);
    if (second_colon == std::string_view::npos) return std::nullopt;
    const std::string_view owner = line.substr(0, first_colon);
    const std::optional<std::uint32_t> first =
        decimal(line.substr(first_colon + 1, second_colon - first_colon - 1));
    const std::optional<std::uint32_t> count = decimal(line.substr(second_colon + 1));
    if (owner.empty() || owner.size() > kMaxOwnerName || !first || !count || *count == 0)
        return std::nullopt;
    for (const char c : owner)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return std::nullopt;
    // The range must end below the invalid uid.
    if (std::uint64_t{*first} + *count - 1 >= kInvalidUid) return std::nullopt;
    return SubordinateRange{std::string(owner), static_cast<uid_t>(*first), *count};
}

}  // namespace

std::string BudgetHolder::describe() const {
    if (is_unowned()) return "the unowned subordinate uids";
    return "uid " + std::to_string(uid());
}

uid_t parse_sub_uid_min(std::string_view login_defs) {
    uid_t found = kDefaultSubUidMin;
    for_each_line(login_defs, [&found](std::string_view line) {
        line = trimmed(line);
        constexpr std::string_view key = "SUB_UID_MIN";
        if (line.substr(0, key.size()) != key) return;
        std::string_view value = line.substr(key.size());
        if (value.empty() || !blank(value.front())) return;
        value = trimmed(value);
        if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
            value = value.substr(1, value.size() - 2);
        const std::optional<std::uint32_t> number = decimal(value);
        if (number && *number != kInvalidUid) found = static_cast<uid_t>(*number);
    });
    return found;
}

SubordinateRanges parse_subordinate_ranges(std::string_view subuid) {
    SubordinateRanges out;
    for_each_line(subuid, [&out](std::string_view line) {
        if (trimmed(line).empty() || line.front() == '#') return;
        if (std::optional<SubordinateRange> range = range_line(line)) {
            out.ranges.push_back(std::move(*range));
        } else {
            ++out.ignored_lines;
        }
    });
    return out;
}

UidOwners::UidOwners(SubordinateRanges ranges, uid_t sub_uid_min)
    : ranges_(std::move(ranges.ranges)), sub_uid_min_(sub_uid_min) {
    by_first_.reserve(ranges_.size());
    for (std::size_t i = 0; i < ranges_.size(); ++i) {
        const SubordinateRange& r = ranges_[i];
        by_first_.push_back(Indexed{r.first, static_cast<uid_t>(r.first + (r.count - 1)), i});
    }
    std::sort(by_first_.begin(), by_first_.end(), [](const Indexed& a, const Indexed& b) {
        return a.first != b.first ? a.first < b.first : a.order < b.order;
    });
    reach_.reserve(by_first_.size());
    uid_t reach = 0;
    for (const Indexed& entry : by_first_) {
        reach = std::max(reach, entry.last);
        reach_.push_back(reach);
    }
}

const SubordinateRange* UidOwners::range_of(uid_t uid) const {
    // The ranges starting at or below `uid`, walked back while one of them
    // can still reach it; the earliest listed that holds it wins.
    auto after = std::upper_bound(by_first_.begin(), by_first_.end(), uid,
                                  [](uid_t value, const Indexed& e) { return value < e.first; });
    std::size_t i = static_cast<std::size_t>(after - by_first_.begin());
    const Indexed* best = nullptr;
    while (i > 0 && reach_[i - 1] >= uid) {
        --i;
        const Indexed& entry = by_first_[i];
        if (entry.last >= uid && (best == nullptr || entry.order < best->order)) best = &entry;
    }
    return best == nullptr ? nullptr : &ranges_[best->order];
}

BudgetHolder UidOwners::holder_of(uid_t uid, Accounts& accounts) const {
    if (const SubordinateRange* range = range_of(uid)) {
        if (std::optional<uid_t> owner = accounts.uid_of_name(range->owner))
            return BudgetHolder::user(*owner);
        if (std::optional<std::uint32_t> number = decimal(range->owner);
            number && *number != kInvalidUid)
            return BudgetHolder::user(static_cast<uid_t>(*number));
        return BudgetHolder::unowned();
    }
    if (uid >= sub_uid_min_ && !accounts.has_passwd_entry(uid)) return BudgetHolder::unowned();
    return BudgetHolder::user(uid);
}

}  // namespace hostkeeper::daemon::portd
