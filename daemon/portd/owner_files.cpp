#include "daemon/portd/owner_files.hpp"

#include <pwd.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cerrno>
#include <vector>

#include "proto/file_io.hpp"

namespace hostkeeper::daemon::portd {

namespace {

// /etc/subuid of 65,536 users is about 2 MiB.
constexpr std::size_t kMaxSubuidBytes = std::size_t{8} << 20;
constexpr std::size_t kMaxLoginDefsBytes = std::size_t{1} << 20;
// NSS answers remembered before the memory is cleared.
constexpr std::size_t kMaxRemembered = 4096;
// getpwnam_r's and getpwuid_r's buffer.
constexpr std::size_t kPasswdBuffer = 16384;

// The text of `path`; empty when it is absent, unreadable or too large (said
// in the log).
std::string file_text(const std::string& path, std::size_t cap) {
    try {
        return proto::read_file_if_exists(path, cap).value_or(std::string());
    } catch (const proto::FileError& e) {
        spdlog::warn("{}: read as empty", e.what());
        return {};
    }
}

}  // namespace

std::optional<uid_t> OwnerFiles::CachedAccounts::uid_of_name(const std::string& name) {
    if (const auto found = names_.find(name); found != names_.end()) return found->second;
    std::vector<char> buffer(kPasswdBuffer);
    passwd entry{};
    passwd* result = nullptr;
    std::optional<uid_t> uid;
    if (::getpwnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &result) == 0 &&
        result != nullptr)
        uid = result->pw_uid;
    if (names_.size() >= kMaxRemembered) names_.clear();
    names_.emplace(name, uid);
    return uid;
}

bool OwnerFiles::CachedAccounts::has_passwd_entry(uid_t uid) {
    if (const auto found = uids_.find(uid); found != uids_.end()) return found->second;
    std::vector<char> buffer(kPasswdBuffer);
    passwd entry{};
    passwd* result = nullptr;
    const bool known =
        ::getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &result) == 0 && result != nullptr;
    if (uids_.size() >= kMaxRemembered) uids_.clear();
    uids_.emplace(uid, known);
    return known;
}

void OwnerFiles::CachedAccounts::forget() {
    names_.clear();
    uids_.clear();
}

OwnerFiles::OwnerFiles(Paths paths) : paths_(std::move(paths)) {}

OwnerFiles::Stamp OwnerFiles::stamp_of(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return {};
    return Stamp{st.st_dev,          st.st_ino,         st.st_size,        st.st_mtim.tv_sec,
                 st.st_mtim.tv_nsec, st.st_ctim.tv_sec, st.st_ctim.tv_nsec};
}

OwnerFiles::Stamps OwnerFiles::current_stamps() const {
    return Stamps{stamp_of(paths_.subuid), stamp_of(paths_.login_defs), stamp_of(paths_.passwd)};
}

void OwnerFiles::reload(const Stamps& stamps) {
    SubordinateRanges ranges = parse_subordinate_ranges(file_text(paths_.subuid, kMaxSubuidBytes));
    const uid_t sub_uid_min = parse_sub_uid_min(file_text(paths_.login_defs, kMaxLoginDefsBytes));
    if (ranges.ignored_lines != 0)
        spdlog::warn("{}: {} malformed line(s) ignored", paths_.subuid, ranges.ignored_lines);
    owners_ = UidOwners(std::move(ranges), sub_uid_min);
    accounts_.forget();
    loaded_ = stamps;
    spdlog::info(
        "budgets per login user: {} subordinate range(s) from {}; unlisted uids from {} without a "
        "passwd entry share one budget",
        owners_.range_count(), paths_.subuid, sub_uid_min);
}

BudgetHolder OwnerFiles::holder_of(uid_t uid) {
    const Stamps stamps = current_stamps();
    if (!loaded_ || !(*loaded_ == stamps)) reload(stamps);
    return owners_.holder_of(uid, accounts_);
}

}  // namespace hostkeeper::daemon::portd
