#include "daemon/pass/store_watch.hpp"

#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/post.hpp>
#include <chrono>
#include <map>
#include <thread>

#include "daemon/pass/gpg_session.hpp"
#include "daemon/pass/pass_keyring.hpp"
#include "daemon/pass/store_layout.hpp"
#include "proto/error.hpp"

namespace hostkeeper::daemon::pass {
namespace asio = boost::asio;

struct StoreWatch::State {
    asio::any_io_executor io;
    credentials::KeyringEvents* events = nullptr;
    PassKeyring* keyring = nullptr;
    int stop_fd = -1;
    std::atomic<bool> change_pending{false};
    std::atomic<bool> stopped{false};
    std::thread thread;
};

namespace {

constexpr std::uint32_t kMask = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO |
                                IN_CLOSE_WRITE | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF;

// Coalesced: one post for a burst of events.
void report_change(const std::shared_ptr<StoreWatch::State>& state) {
    if (state->change_pending.exchange(true)) return;
    asio::post(state->io, [state] {
        state->change_pending = false;
        if (!state->stopped) state->events->keyring_changed();
    });
}

void report_watched(const std::shared_ptr<StoreWatch::State>& state, bool watched) {
    asio::post(state->io, [state, watched] {
        if (!state->stopped) state->events->keyring_watched(watched);
    });
}

class Inotify {
  public:
    Inotify() : fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {}
    Inotify(const Inotify&) = delete;
    Inotify& operator=(const Inotify&) = delete;
    ~Inotify() {
        if (fd_ >= 0) ::close(fd_);
    }
    int fd() const { return fd_; }
    // Watches both folders; true when the store's root is watched.
    bool arm(const std::filesystem::path& store) {
        if (fd_ < 0) return false;
        root_ = ::inotify_add_watch(fd_, store.c_str(), kMask);
        // Not through a link: hostkeeper does not follow one there (store_layout.hpp).
        folder_ = ::inotify_add_watch(fd_, (store / kEntryFolder).c_str(),
                                      kMask | IN_DONT_FOLLOW | IN_ONLYDIR);
        return root_ >= 0;
    }
    bool folder_watched() const { return folder_ >= 0; }
    // Drains what is queued; true when anything was.
    bool drain() {
        alignas(inotify_event) char buffer[8192];
        bool any = false;
        while (true) {
            const ssize_t n = ::read(fd_, buffer, sizeof buffer);
            if (n <= 0) break;
            any = true;
        }
        return any;
    }

  private:
    int fd_;
    int root_ = -1;
    int folder_ = -1;
};

void watch(const std::shared_ptr<StoreWatch::State>& state) {
    const std::filesystem::path store = state->keyring->store_dir();
    Inotify inotify;
    bool watched = false;
    bool reported = false;
    auto last_check = std::chrono::steady_clock::now();
    // Key id -> its secret key's keygrips (a key listing each, once).
    std::map<std::string, std::vector<std::string>> keygrips;
    while (!state->stopped) {
        if (!watched || !inotify.folder_watched()) {
            const bool was = watched;
            watched = inotify.arm(store);
            if (!reported || was != watched) {
                report_watched(state, watched);
                reported = true;
                if (!watched)
                    spdlog::warn(
                        "password store {}: cannot watch it for changes; nothing read "
                        "from it is cached",
                        store.string());
            }
            if (watched && !was) report_change(state);
        }
        pollfd fds[2] = {{state->stop_fd, POLLIN, 0}, {inotify.fd(), POLLIN, 0}};
        const int ready = ::poll(fds, inotify.fd() >= 0 ? 2 : 1, 1000);
        if (ready < 0 && errno != EINTR) break;
        if ((fds[0].revents & POLLIN) != 0) break;
        if (inotify.fd() >= 0 && (fds[1].revents & POLLIN) != 0 && inotify.drain()) {
            report_change(state);
            // The folder may have been made or removed: watch again.
            watched = false;
        }
        const auto now = std::chrono::steady_clock::now();
        if (now - last_check < std::chrono::seconds(1)) continue;
        last_check = now;
        const std::vector<std::string> keyids = state->keyring->used_keyids();
        if (keyids.empty()) continue;
        bool locked = false;
        try {
            std::vector<std::string> grips;
            for (const std::string& id : keyids) {
                auto it = keygrips.find(id);
                if (it == keygrips.end())
                    it = keygrips.emplace(id, keygrips_of(state->keyring->gpg_options(), {id}))
                             .first;
                grips.insert(grips.end(), it->second.begin(), it->second.end());
            }
            locked = !keys_needing_passphrase(grips).empty();
        } catch (const proto::Error&) {
            locked = true;  // gpg-agent or gpg gone: its cached passphrases with it
        }
        if (locked) {
            state->keyring->forget_used_keys();
            spdlog::info(
                "gpg-agent no longer holds a passphrase the cached answers were read "
                "with: the cache is dropped");
            report_change(state);
        }
    }
}

}  // namespace

StoreWatch::StoreWatch(asio::any_io_executor io, credentials::KeyringEvents& events,
                       PassKeyring& keyring)
    : state_(std::make_shared<State>()) {
    state_->io = std::move(io);
    state_->events = &events;
    state_->keyring = &keyring;
    state_->stop_fd = ::eventfd(0, EFD_CLOEXEC);
    // Nothing is cached until the watch stands.
    events.keyring_watched(false);
    state_->thread = std::thread([state = state_] { watch(state); });
}

StoreWatch::~StoreWatch() {
    state_->stopped = true;
    const std::uint64_t one = 1;
    if (state_->stop_fd >= 0 && ::write(state_->stop_fd, &one, sizeof one) < 0) {
        // Cannot happen for an eventfd below its maximum; the poll's 1 s tick stops it anyway.
    }
    if (state_->thread.joinable()) state_->thread.join();
    if (state_->stop_fd >= 0) ::close(state_->stop_fd);
}

}  // namespace hostkeeper::daemon::pass
