#pragma once
// The archive cache: provider packages and module archives downloaded once
// per machine user into $XDG_CACHE_HOME/hostkeeper/archives/ (0700), or once
// for a group of users into a shared directory (registry_cache.archive_dir,
// shared_store.hpp), and served from there (the registry cache's listener
// serves them).
//
// Layout: DIR/providers/<sha256 of the zip>, DIR/modules/<sha256 of the
// source URL>, DIR/tmp/ for downloads in progress (DIR/tmp/<uid>/ in a
// shared directory). A file appears under its
// key only complete and verified: it is written in DIR/tmp/ under a name of
// this process's own (mkstemp), verified, then renamed into place, so two
// daemons sharing DIR (two sessions of one user) never see half a file.
//
// A download is followed while it runs: get() returns as soon as the first
// bytes are in the temp file, with a descriptor of its own on that file and
// the GrowingArchive that says how far it got, so the listener streams the
// archive to Terraform as it arrives. Everyone asking for the key meanwhile
// follows the same download (one upstream request). The SHA-256 is computed
// as the bytes arrive, once; the verdict (zh:, then h1: by unzipping when
// published) comes before a reader may send the last byte
// (growing_archive.hpp), and before the file is synced to disk (on the
// hashing thread) and renamed into place.
// Archives are verified once, before they are stored: a provider's key is
// the SHA-256 of its contents, and Terraform checks the package it gets
// against the registry's shasum again; the directory is the user's own
// (0700). A found file is not hashed again; an empty or unreadable one is a
// miss (and is replaced by the next download).
//
// A shared directory (2770, a group's) holds every member's archives. Its
// files are 0440 in the directory's group. There a name vouches for nothing
// (a member may write or rename any file), so find() hashes a provider
// package against its key, off the event loop, before serving it, once per
// daemon unless the file changes (FileIdentity: dev, inode, size, mtime,
// ctime); one that does not match is removed and counted (stats().rejected),
// never served. Another user's package (its owner could rewrite it while it
// is sent) is copied while it is hashed into this user's temp directory;
// the copy is served and, when it matched, renamed over the name (0440,
// this user's), so only this user's own files are known as verified.
// Module archives have nothing published to check against:
// each user keeps their own under DIR/modules/<uid>/ (2750, theirs), 0400,
// and only those are served. A stored file is opened without following a
// symbolic link or blocking: anything but a regular file of at most
// kMaxPackageSize bytes is a miss (and removed when it is under its key).
//
// Least recently used goes first: a hit sets the file's mtime to now (its
// owner's hits; another member's show in its access time), and eviction
// (after each insert) removes the oldest until the files under DIR (every
// daemon's, every user's) fit max_bytes, counted by the disk space they take
// (st_blocks, not st_size: a sparse file counts what it holds), never the file just stored and
// never one a daemon is serving: a found archive carries a lease, a shared
// lock on its byte of DIR/.lock, and eviction skips what it cannot lock
// exclusively (or may not remove). Archives are returned as open file
// descriptors, so a local unlink never cuts a response short either.
//
// When the directory cannot take an archive (a full or read-only file
// system, a quota, permissions: any failure to create, write or rename a
// file in it, as opposed to a download that failed or did not verify), get()
// throws StoreUnwritable and the caller passes the archive through uncached.
// The problem is logged once, shown by stats().store_problem, and for
// kStoreRetry after it get() does not try the directory again (no download is
// started only to fail for want of space); the first archive stored clears it.
// A download that is whole and verified is never failed for want of a place:
// when it cannot be stored under its name (something a member put there that
// can be neither removed nor moved aside, make_way(), or any failure to seal
// or rename it) it is finished from its open temp file, which its readers
// keep, and not kept; counted as passed through and logged once per cause
// (an errno). Only a problem of the directory (not of the one name) also
// rests the store as above.
//
// With a tier (set_tier: the fleet tier), a download first asks the tier
// for the archive and verifies what it gives as an upstream download (the
// readers get it whole, once verified); on a miss or a refusal it downloads
// upstream, and offers what it stored to the tier.
//
// Event-loop only, like async::SingleFlight: hashing runs on a thread of
// its own; file-system calls (open, rename, a directory scan per insert)
// run on the caller's thread.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "daemon/archives/archive_options.hpp"
#include "daemon/archives/archive_tier.hpp"
#include "daemon/archives/growing_archive.hpp"
#include "daemon/archives/shared_store.hpp"
#include "daemon/archives/verified_download.hpp"
#include "daemon/http/http_client.hpp"
#include "proto/error.hpp"

namespace hostkeeper::daemon::archives {

// An owned file descriptor (closed on destruction), movable.
class OwnedFd {
  public:
    OwnedFd() = default;
    explicit OwnedFd(int fd) noexcept : fd_(fd) {}
    OwnedFd(OwnedFd&& other) noexcept : fd_(other.release()) {}
    OwnedFd& operator=(OwnedFd&& other) noexcept;
    OwnedFd(const OwnedFd&) = delete;
    OwnedFd& operator=(const OwnedFd&) = delete;
    ~OwnedFd();
    int get() const noexcept { return fd_; }
    int release() noexcept;
    // The same file opened again read-only (close-on-exec), with an offset
    // of its own (through /proc/self/fd; dup() where /proc is missing).
    // Throws proto::Error internal.
    OwnedFd reopen() const;

  private:
    int fd_ = -1;
};

// A store's directories, each opened once (not through a symbolic link) and
// checked by its descriptor; every file in them is reached relative to
// these. In a shared directory `own_modules` is DIR/modules/<uid> and `tmp`
// DIR/tmp/<uid> (2700): nobody else can replace what is written there. In a
// private one `own_modules` is `modules` and `tmp` DIR/tmp.
struct StoreDirs {
    OwnedFd top;
    OwnedFd providers;
    OwnedFd modules;
    OwnedFd own_modules;
    OwnedFd tmp;
    std::filesystem::path tmp_path;  // `tmp` in messages
};

struct Archive {
    OwnedFd fd;  // open read-only, at offset 0 when returned
    // Its size; for one still downloading, the bytes written so far.
    std::uint64_t size = 0;
    // The last segment of the download URL's path when it is a plain file
    // name (letters, digits, "._+-"); "" otherwise and for find().
    std::string filename_hint;
    // Set while it is downloading (from get()): `fd` is the temp file, and
    // this says how much of it may be sent. nullptr for a stored archive.
    std::shared_ptr<GrowingArchive> growing;
    // Held while the archive is served: eviction (any daemon's) leaves the
    // file alone meanwhile. Empty when locks are off (shared_store.hpp).
    std::shared_ptr<void> lease;

    Archive duplicate() const;  // the same file with an open file description of its own
};

struct ArchiveRequest {
    // "providers/<sha256 hex of the zip>" or "modules/<sha256 hex of the
    // source URL>" (module_archive_key), lowercase; anything else is refused
    // with proto::Error bad_request.
    std::string key;
    std::string url;  // the upstream archive (https or http)
    // The registry host's token for a URL on its own origin; none by default.
    // A stored archive is found by its key, whoever's token fetched it.
    DownloadCredentials credentials;
    // "zh:"/"h1:" hashes that must confirm the file (others are ignored).
    // A provider's must include at least one; its key is its zh: hash too.
    std::vector<std::string> published;
    bool verify = true;  // false only for module archives: nothing published to check against
    std::string what;    // names it in messages: "provider hashicorp/null 3.2.1 linux_amd64"
    // How a tier (set_tier) names it; none: the tier is not asked.
    std::optional<TierItem> tier_item;
};

struct ArchiveStats {
    std::uint64_t count = 0;      // archives stored (at the last scan, plus this daemon's changes)
    std::uint64_t bytes = 0;      // the disk space they take (allocated blocks)
    std::uint64_t max_bytes = 0;  // the cap
    std::uint64_t downloads = 0;  // archives downloaded, verified and stored by this daemon
    std::uint64_t hits = 0;       // archives served from the directory
    std::uint64_t evictions = 0;  // archives removed to stay under the cap
    std::uint64_t failures = 0;   // downloads that failed or did not verify
    // Archives not stored: the directory could not take them (passed
    // through, or served from their download's own file).
    std::uint64_t passed_through = 0;
    // Archives found in a shared directory that did not match their key:
    // removed, never served; each file once, however many readers refused it.
    std::uint64_t rejected = 0;
    // "" while the directory takes archives; else why not, for people:
    // "the cache directory is full: N bytes free on /path; archives are
    // passed through uncached".
    std::string store_problem;
};

// How long get() passes archives through without trying the directory again.
inline constexpr std::chrono::seconds kStoreRetry{60};

// Throws proto::Error bad_request unless `key` is an archive key (above).
void check_archive_key(const std::string& key);
// "modules/<sha256 hex of url>".
std::string module_archive_key(const std::string& url);

class ArchiveStore {
  public:
    // Makes the directories (0700, or 2770 in a shared one) when it can,
    // removes temp files older than an hour, and counts what is stored; a
    // directory it cannot make or refuses (shared_store.hpp) is logged here,
    // shown by stats().store_problem, and passes every get() through.
    ArchiveStore(boost::asio::any_io_executor io, http::HttpClient& http,
                 ArchiveStoreOptions options);
    ArchiveStore(const ArchiveStore&) = delete;
    ArchiveStore& operator=(const ArchiveStore&) = delete;

    // The stored archive, opened, leased and marked used; nullopt when it
    // is not stored (or empty, unreadable, being evicted, or another user's
    // that did not verify). Throws bad_request for a bad key.
    boost::asio::awaitable<std::optional<Archive>> find(const std::string& key);

    // The archive: stored, else downloading (once, whoever else asks
    // meanwhile): returned once its first bytes are in, to be followed
    // (Archive::growing); it is stored when it is whole and verified. Throws
    // proto::Error for a download that failed before its first byte:
    // bad_request (key, URL, a provider without verification or whose
    // published zh: hashes are not its key), registry_failed (the download),
    // verification_failed (nothing stored; the next get() tries again),
    // StoreUnwritable (the directory cannot take it: pass it through),
    // internal (stopping). A failure after that reaches the readers as
    // GrowingArchive's failure.
    boost::asio::awaitable<Archive> get(ArchiveRequest request);

    ArchiveStats stats() const;

    // Asked on a miss before the upstream URL, and offered what comes from
    // there (archive_tier.hpp); nullptr: none. It must outlive the store.
    void set_tier(ArchiveTier* tier) noexcept { tier_ = tier; }
    // The tier's status; null when there is none.
    proto::Json tier_status() const { return tier_ != nullptr ? tier_->status() : proto::Json(); }

    // Refuses new downloads (get() throws internal); downloads in progress
    // finish. find() still answers.
    void stop();

  private:
    struct Entry {
        std::uint64_t size = 0;  // allocated: st_blocks * 512
        std::filesystem::file_time_type used;
    };
    // A stored file opened by find(), and whether it must be hashed first.
    struct Opened {
        Archive archive;
        std::string name;  // under DIR: stored_name(key)
        FileIdentity id;
        bool verify = false;
        bool foreign = false;  // another user's: they may rewrite it while it is served
    };

    // The file's path under DIR: the key, or modules/<uid>/<hex> in a shared directory.
    std::string stored_name(const std::string& key) const;
    std::optional<Opened> open_stored(const std::string& key);
    boost::asio::awaitable<std::string> hash_of(int fd);
    bool accept_hashed(const Opened& opened, const std::string& hash);
    boost::asio::awaitable<std::optional<Archive>> adopt(Opened opened);
    std::optional<Archive> adopted(Opened opened, const StoreDirs& dirs, const OwnedFd& copy,
                                   const std::string& copy_file, const std::string& hash);
    void reject(const std::string& name, const FileIdentity& id, const std::string& why);
    Archive served(Opened opened);
    void seal(int fd, const std::string& temp, bool provider) const;
    void remember_stored(const std::string& name, int fd, std::uint64_t size);
    std::shared_ptr<void> lease_of(const std::string& name) const;
    // The directory (of `dirs`) and file name of a stored_name(); -1 for
    // another user's module archive (not ours to open or remove).
    static std::pair<int, std::string> locate(const StoreDirs& dirs, const std::string& name);
    void scan_file(int dir, const std::string& file, const std::string& name);
    void prepare();
    void prepare_to_store();
    void scan();
    void sweep_temp_files() const;
    void evict(const std::string& keep);
    // A download in progress: its temp file (readers open it again) and how far it got.
    struct Flight {
        OwnedFd file;
        std::shared_ptr<const StoreDirs> dirs;  // held for the download's whole course
        std::string temp;                       // its path, through the temp directory's descriptor
        std::string temp_file;                  // its name in that directory
        std::string hint;
        std::shared_ptr<GrowingArchive> growing;
        bool kept = false;  // stored under its name once verified; else served from `file` only
        std::optional<TierItem> offer;  // downloaded upstream: offered to the tier once kept
    };
    std::shared_ptr<Flight> start(ArchiveRequest request);
    boost::asio::awaitable<void> download(std::shared_ptr<Flight> flight, ArchiveRequest request,
                                          std::optional<ExpectedHashes> expected);
    boost::asio::awaitable<std::uint64_t> insert(Flight& flight, ArchiveRequest request,
                                                 std::optional<ExpectedHashes> expected);
    boost::asio::awaitable<DownloadedFile> obtain(Flight& flight, ArchiveRequest request,
                                                  std::optional<ExpectedHashes> expected);
    boost::asio::awaitable<DownloadedFile> upstream(Flight& flight, ArchiveRequest request,
                                                    std::optional<ExpectedHashes> expected);
    boost::asio::awaitable<std::optional<DownloadedFile>> from_tier(
        Flight& flight, const ArchiveRequest& request,
        const std::optional<ExpectedHashes>& expected);
    void offer(const TierItem& item, const OwnedFd& file, std::uint64_t size,
               const std::string& key) const;
    void finished(const std::string& key, const Flight& flight, std::uint64_t size,
                  const std::exception_ptr& error);
    OwnedFd store_download(const StoreDirs& dirs, const OwnedFd& out, const std::string& temp_file,
                           const std::string& name, const std::string& what) const;
    std::optional<OwnedFd> not_synced(const Flight& flight, const std::string& what, int error);
    std::optional<OwnedFd> keep_download(const Flight& flight, const std::string& name,
                                         const std::string& what);
    void store_failed(const StoreUnwritable& e);
    void not_kept(const StoreUnwritable& e);
    bool store_resting() const;

    boost::asio::any_io_executor io_;
    http::HttpClient& http_;
    ArchiveTier* tier_ = nullptr;
    ArchiveStoreOptions options_;
    boost::asio::thread_pool hashing_{1};
    std::map<std::string, std::shared_ptr<Flight>> flights_;  // by key
    std::optional<StoreMode> mode_;                           // none while the directory is refused
    std::shared_ptr<const StoreDirs> dirs_;  // held by a download for its whole course
    StoreLocks locks_;
    VerifiedFiles verified_;
    std::map<std::string, Entry> stored_;  // by stored_name()
    std::uint64_t downloads_ = 0;
    std::uint64_t hits_ = 0;
    std::uint64_t evictions_ = 0;
    std::uint64_t failures_ = 0;
    std::uint64_t passed_through_ = 0;
    std::uint64_t rejected_ = 0;
    // The file last refused under each name (reject): one per name this
    // daemon's answers named.
    std::map<std::string, FileIdentity> refused_;
    // Why the directory cannot take archives, and since when; "" when it can.
    std::string store_error_;
    std::chrono::steady_clock::time_point store_failed_at_;
    std::set<int> logged_causes_;  // errnos of store problems logged since one was stored
    bool stopped_ = false;
};

}  // namespace hostkeeper::daemon::archives
