#pragma once
// The uid-to-login-user mapping of uid_owners.hpp, fed by the machine's own
// files: /etc/subuid and /etc/login.defs, read at start and again when
// either (or /etc/passwd) changes, checked with one stat(2) each per use;
// and the account database asked through NSS (getpwnam_r, getpwuid_r),
// remembered until a file changes.

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>

#include "daemon/portd/uid_owners.hpp"

namespace hostkeeper::daemon::portd {

// Where the files are (other paths in tests).
struct OwnerFilePaths {
    std::string subuid = "/etc/subuid";
    std::string login_defs = "/etc/login.defs";
    std::string passwd = "/etc/passwd";
};

class OwnerFiles {
  public:
    using Paths = OwnerFilePaths;

    explicit OwnerFiles(Paths paths = {});

    // The budget holder of `uid` (UidOwners::holder_of), after reading the
    // files again if one changed.
    BudgetHolder holder_of(uid_t uid);

  private:
    // What stat(2) says of a file, enough to see a change (absent: all 0).
    struct Stamp {
        dev_t device = 0;
        ino_t inode = 0;
        off_t size = 0;
        long mtime_s = 0;
        long mtime_ns = 0;
        long ctime_s = 0;
        long ctime_ns = 0;
        bool operator==(const Stamp&) const = default;
    };
    struct Stamps {
        Stamp subuid;
        Stamp login_defs;
        Stamp passwd;
        bool operator==(const Stamps&) const = default;
    };
    // NSS, its answers remembered (a bounded number, forgotten when a file
    // changes).
    class CachedAccounts : public Accounts {
      public:
        std::optional<uid_t> uid_of_name(const std::string& name) override;
        bool has_passwd_entry(uid_t uid) override;
        void forget();

      private:
        std::unordered_map<std::string, std::optional<uid_t>> names_;
        std::unordered_map<uid_t, bool> uids_;
    };

    static Stamp stamp_of(const std::string& path);
    Stamps current_stamps() const;
    void reload(const Stamps& stamps);

    Paths paths_;
    std::optional<Stamps> loaded_;
    UidOwners owners_;
    CachedAccounts accounts_;
};

}  // namespace hostkeeper::daemon::portd
