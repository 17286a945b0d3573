#pragma once
// Bounded D-Bus calls to the Secret Service: every call is cancelled when
// its time is up (a prompt by the unlock timeout, any other call by the
// call timeout), and a failed call becomes a proto::Error that says what
// went wrong and what to do.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "daemon/libsecret/glib_handles.hpp"
#include "proto/error.hpp"

namespace hostkeeper::daemon::libsecret {

// A failure of the connection rather than of the call: the service was
// restarted (its old unique name, objects and session are gone) or went away.
// Worth one more try on a new connection.
class StaleConnection : public proto::Error {
  public:
    using proto::Error::Error;
};

// What a cancelled call means: an unlock prompt nobody answered in time, or
// a Secret Service that did not answer a plain call in time.
struct Bound {
    std::chrono::milliseconds timeout;
    bool prompt = false;
};

// Throws the proto::Error that `raw` (adopted) means for the call described
// by `context` (StaleConnection when a new connection may succeed), after
// dropping the service connection.
[[noreturn]] void fail(GError* raw, const std::string& context, Bound bound);

// Cancels the armed call when its time is up: D-Bus calls to a stopped
// service, and prompts nobody answers, otherwise wait indefinitely (or for
// GDBus's 25 s). One thread for the adapter's one worker thread's calls.
class CallWatchdog {
  public:
    CallWatchdog() : thread_([this] { watch(); }) {}
    CallWatchdog(const CallWatchdog&) = delete;
    CallWatchdog& operator=(const CallWatchdog&) = delete;
    ~CallWatchdog() {
        {
            const std::lock_guard lock(mutex_);
            quit_ = true;
        }
        cv_.notify_one();
        thread_.join();
    }

    void arm(GCancellable* cancellable, std::chrono::milliseconds timeout) {
        {
            const std::lock_guard lock(mutex_);
            armed_ = cancellable;
            deadline_ = std::chrono::steady_clock::now() + timeout;
        }
        cv_.notify_one();
    }
    void disarm() {
        const std::lock_guard lock(mutex_);
        armed_ = nullptr;
    }

  private:
    void watch() {
        std::unique_lock lock(mutex_);
        while (!quit_) {
            if (armed_ == nullptr) {
                cv_.wait(lock);
            } else if (std::chrono::steady_clock::now() >= deadline_) {
                // Still armed: the call's owner disarms (under the lock) before it unrefs.
                g_cancellable_cancel(armed_);
                armed_ = nullptr;
            } else {
                cv_.wait_until(lock, deadline_);
            }
        }
    }

    std::mutex mutex_;
    std::condition_variable cv_;
    GCancellable* armed_ = nullptr;
    std::chrono::steady_clock::time_point deadline_;
    bool quit_ = false;
    std::thread thread_;
};

// One bounded D-Bus call: a cancellable the watchdog cancels after `bound`.
class Call {
  public:
    Call(CallWatchdog& watchdog, Bound bound)
        : watchdog_(watchdog), bound_(bound), cancellable_(g_cancellable_new()) {
        watchdog_.arm(cancellable_.get(), bound.timeout);
    }
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;
    ~Call() { watchdog_.disarm(); }
    GCancellable* cancellable() const { return cancellable_.get(); }
    [[noreturn]] void fail(GError* error, const std::string& context) const {
        watchdog_.disarm();
        ::hostkeeper::daemon::libsecret::fail(error, context, bound_);
    }

  private:
    CallWatchdog& watchdog_;
    Bound bound_;
    CancellablePtr cancellable_;
};

// What every operation needs: where to bound its calls.
struct Calls {
    CallWatchdog& watchdog;
    std::chrono::milliseconds call_timeout;
    std::chrono::milliseconds unlock_timeout;
    Bound plain() const { return Bound{call_timeout, false}; }
    Bound prompt() const { return Bound{unlock_timeout, true}; }
};

// The Secret Service, on the connection libsecret keeps (made if need be).
ServicePtr connect(const Calls& calls);

// libsecret's D-Bus proxies deliver signals (an item created, the
// collection's Items property changed, ...) to the main context of the
// thread that made them: this worker's default context, which nothing else
// iterates. Unless dispatched they pile up, and some grow with the number of
// items (measured: about 30 kB per store with 200 items). Drain after every call.
class DrainMainContext {
  public:
    DrainMainContext() = default;
    DrainMainContext(const DrainMainContext&) = delete;
    DrainMainContext& operator=(const DrainMainContext&) = delete;
    ~DrainMainContext() {
        while (g_main_context_iteration(nullptr, FALSE) != FALSE) {
        }
    }
};

}  // namespace hostkeeper::daemon::libsecret
