#pragma once
// Desktop notifications through org.freedesktop.Notifications (the Desktop
// Notifications Specification's Notify) on the session bus, as
// proto::session_bus_address finds it (never an autolaunched bus). When
// there is no session bus, or nobody owns the name, nothing is shown and
// nothing is reported (debug lines only). Calls run on a thread of their
// own, each bounded, so a slow notification server never holds up the
// daemon.

#include <boost/asio/thread_pool.hpp>
#include <string>

namespace hostkeeper::daemon::notify {

// The application name the notifications carry.
inline constexpr const char* kAppName = "hostkeeper";

class DesktopNotifications {
  public:
    DesktopNotifications() = default;
    DesktopNotifications(const DesktopNotifications&) = delete;
    DesktopNotifications& operator=(const DesktopNotifications&) = delete;
    ~DesktopNotifications() { stop(); }

    // Shows `summary` and `body` (plain text); returns at once.
    void send(std::string summary, std::string body);
    // Waits for the notifications under way; none are sent after it.
    void stop();

  private:
    boost::asio::thread_pool thread_{1};
};

// The same, blocking: true when the server took the notification.
bool notify_now(const std::string& summary, const std::string& body);

}  // namespace hostkeeper::daemon::notify
