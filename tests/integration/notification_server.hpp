#pragma once
// A real desktop notification server on the test's private session bus:
// Debian's dunst on an Xvfb display of its own. history() is what it
// received (`dunstctl history`, after closing what it still shows).

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "harness.hpp"
#include "https_world.hpp"

namespace hostkeeper::it {

class NotificationServer {
  public:
    NotificationServer() {
        if (!std::filesystem::exists("/usr/bin/Xvfb") ||
            !std::filesystem::exists("/usr/bin/dunst")) {
            why_not_ = "no /usr/bin/Xvfb or /usr/bin/dunst (apt-get install xvfb dunst)";
            return;
        }
        // Xvfb picks a free display and prints its number (-displayfd 1).
        xvfb_ = spawn({"/usr/bin/Xvfb", "-displayfd", "1", "-nolisten", "tcp"});
        std::string display;
        wait_until(
            [&] {
                display = read_fd(xvfb_.out_fd);
                return display.find('\n') != std::string::npos || !process_alive(xvfb_.pid);
            },
            std::chrono::seconds(10));
        if (display.find('\n') == std::string::npos) {
            why_not_ = "Xvfb did not start: " + read_fd(xvfb_.err_fd);
            return;
        }
        display = ":" + display.substr(0, display.find('\n'));
        RunOptions options;
        options.env["DISPLAY"] = display;
        dunst_ = spawn({"/usr/bin/dunst"}, options);
        if (!wait_until([] { return owned(); }, std::chrono::seconds(10)))
            why_not_ =
                "dunst did not take org.freedesktop.Notifications: " + read_fd(dunst_.err_fd);
    }
    NotificationServer(const NotificationServer&) = delete;
    NotificationServer& operator=(const NotificationServer&) = delete;
    ~NotificationServer() {
        for (Spawned* p : {&dunst_, &xvfb_}) {
            if (p->pid > 0) {
                ::kill(p->pid, SIGTERM);
                (void)p->wait();
            }
        }
    }

    // "" when it runs; else why not (the test is skipped).
    const std::string& why_not() const { return why_not_; }

    // The notifications received so far, oldest last ("data"[0] of `dunstctl
    // history`), each member as {"type", "data"}.
    Json history() const {
        (void)run({"/usr/bin/dunstctl", "close-all"});
        const Result listed = run({"/usr/bin/dunstctl", "history"});
        if (listed.exit_code != 0) return Json::array();
        return Json::parse(listed.out).at("data").at(0);
    }
    // The notifications whose summary contains `text`.
    Json with_summary(const std::string& text) const {
        Json out = Json::array();
        for (const Json& n : history()) {
            if (n.at("summary").at("data").get<std::string>().find(text) != std::string::npos)
                out.push_back(n);
        }
        return out;
    }

  private:
    static bool owned() {
        const Result r =
            run({"/usr/bin/dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.DBus",
                 "/org/freedesktop/DBus", "org.freedesktop.DBus.NameHasOwner",
                 "string:org.freedesktop.Notifications"});
        return r.exit_code == 0 && r.out.find("boolean true") != std::string::npos;
    }
    static std::string read_fd(int fd) {
        std::string out;
        char buffer[4096];
        off_t at = 0;
        for (ssize_t n; (n = ::pread(fd, buffer, sizeof buffer, at)) > 0; at += n)
            out.append(buffer, static_cast<std::size_t>(n));
        return out;
    }

    Spawned xvfb_;
    Spawned dunst_;
    std::string why_not_;
};

}  // namespace hostkeeper::it
