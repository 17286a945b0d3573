#pragma once
// The last good answer of each registry document the listener served, kept
// on disk so that a version used before installs again while the registry is
// unreachable, even after hostkeeperd restarted (the answer cache itself
// lives in memory). Only answers that hold nothing but the registry's
// metadata and the listener's own URLs are kept (a module location passed
// through as given may carry a signed URL: never written). One file per
// answer under DIR (0700), 0600, replaced atomically; the key includes the
// listener's base URL (http://127.0.0.1:PORT/), so an answer kept for
// another port's URLs is never served.
//
// Failures are kept the same way, for as long as the answer cache remembers
// them (error_ttl, or as Retry-After asked): after a restart a registry that
// just failed (hung, down) is not asked again while its failure is fresh, as
// it would not have been before the restart. One file per failed answer
// ("<hash>.failed"), holding the message and when to ask again (wall clock),
// removed by the next good answer. The names of the failure files are read
// once, when the snapshots are made: only a key among them, or a new
// failure, touches the disk on the way to an answer.
//
// A document's file names are hashed from its key once per request (Key).
// The digest of the answer last written for each key is kept in memory: an
// answer the same as last time is not written again, and the file is read
// back only at the first answer for its key since the snapshots were made
// (it may hold that answer already, kept before a restart).

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "daemon/registry_cache/listener_messages.hpp"

namespace hostkeeper::daemon::registry_cache {

class DocumentSnapshots {
  public:
    explicit DocumentSnapshots(std::filesystem::path dir);

    // A document's key (the listener's base URL and the route's path) and
    // the stem of its files' names (the key's SHA-256, hex).
    class Key {
      public:
        explicit Key(std::string text);
        const std::string& text() const { return text_; }
        const std::string& stem() const { return stem_; }

      private:
        std::string text_;
        std::string stem_;
    };

    // Best effort: a failure is logged once and the answer simply not kept.
    void save(const Key& key, const ListenerResponse& response);
    std::optional<ListenerResponse> load(const Key& key) const;

    struct Failure {
        std::string message;
        std::chrono::seconds retry_in{0};  // from now
    };
    // Best effort, like save(): the answer to `key` failed with `message`;
    // it is not asked for again for `retry_in`.
    void save_failure(const Key& key, const std::string& message, std::chrono::seconds retry_in);
    // The failure kept for `key` while it is fresh; nullopt otherwise.
    std::optional<Failure> load_failure(const Key& key) const;
    // A good answer came: its kept failure (if any) goes, and `response`
    // is kept (save) when `keep`.
    void answered(const Key& key, const ListenerResponse& response, bool keep);
    // Whether this daemon has written (or found the same) answer for `key`.
    bool kept(const Key& key) const { return written_.count(key.stem()) != 0; }

  private:
    std::filesystem::path file_of(const Key& key) const;
    std::filesystem::path failure_file_of(const Key& key) const;
    void create_dir() const;
    void forget_failure(const Key& key);

    std::filesystem::path dir_;
    // The failure files in dir_, by stem ("<hash>" of "<hash>.failed").
    std::set<std::string> failed_;
    // The SHA-256 (hex) of the file last written or found for each stem.
    std::map<std::string, std::string> written_;
    bool warned_ = false;
};

}  // namespace hostkeeper::daemon::registry_cache
