#include "daemon/notify/desktop_notifications.hpp"

#include <gio/gio.h>
#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <memory>
#include <utility>

#include "proto/session_bus.hpp"

namespace hostkeeper::daemon::notify {
namespace {

constexpr const char* kName = "org.freedesktop.Notifications";
constexpr int kCallTimeoutMs = 3000;

struct Unref {
    void operator()(GDBusConnection* p) const { g_object_unref(p); }
    void operator()(GVariant* p) const { g_variant_unref(p); }
    void operator()(GError* p) const { g_error_free(p); }
};
using ConnectionPtr = std::unique_ptr<GDBusConnection, Unref>;
using VariantPtr = std::unique_ptr<GVariant, Unref>;
using ErrorPtr = std::unique_ptr<GError, Unref>;

std::string message_of(GError* raw) {
    const ErrorPtr error(raw);
    return error ? error->message : "unknown error";
}

ConnectionPtr session_bus() {
    const std::string address = proto::session_bus_address();
    if (address.empty()) return nullptr;
    GError* error = nullptr;
    ConnectionPtr bus(g_dbus_connection_new_for_address_sync(
        address.c_str(),
        static_cast<GDBusConnectionFlags>(G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
                                          G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION),
        nullptr, nullptr, &error));
    if (!bus) spdlog::debug("no desktop notification: the session bus: {}", message_of(error));
    return bus;
}

bool has_owner(GDBusConnection* bus) {
    GError* error = nullptr;
    const VariantPtr reply(g_dbus_connection_call_sync(
        bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
        "NameHasOwner", g_variant_new("(s)", kName), G_VARIANT_TYPE("(b)"), G_DBUS_CALL_FLAGS_NONE,
        kCallTimeoutMs, nullptr, &error));
    if (!reply) {
        spdlog::debug("no desktop notification: NameHasOwner: {}", message_of(error));
        return false;
    }
    gboolean owned = FALSE;
    g_variant_get(reply.get(), "(b)", &owned);
    return owned != FALSE;
}

}  // namespace

bool notify_now(const std::string& summary, const std::string& body) {
    const ConnectionPtr bus = session_bus();
    if (!bus || !has_owner(bus.get())) return false;
    GVariantBuilder actions;
    g_variant_builder_init(&actions, G_VARIANT_TYPE("as"));
    GVariantBuilder hints;
    g_variant_builder_init(&hints, G_VARIANT_TYPE("a{sv}"));
    GError* error = nullptr;
    // Notify(app_name, replaces_id, app_icon, summary, body, actions, hints,
    // expire_timeout: -1, the server's default).
    const VariantPtr reply(g_dbus_connection_call_sync(
        bus.get(), kName, "/org/freedesktop/Notifications", kName, "Notify",
        g_variant_new("(susssasa{sv}i)", kAppName, 0U, "", summary.c_str(), body.c_str(), &actions,
                      &hints, -1),
        G_VARIANT_TYPE("(u)"), G_DBUS_CALL_FLAGS_NONE, kCallTimeoutMs, nullptr, &error));
    if (!reply) {
        spdlog::debug("desktop notification not shown: {}", message_of(error));
        return false;
    }
    return true;
}

void DesktopNotifications::send(std::string summary, std::string body) {
    boost::asio::post(thread_, [summary = std::move(summary), body = std::move(body)] {
        (void)notify_now(summary, body);
    });
}

void DesktopNotifications::stop() {
    thread_.join();
}

}  // namespace hostkeeper::daemon::notify
