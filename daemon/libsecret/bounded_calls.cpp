#include "daemon/libsecret/bounded_calls.hpp"

namespace hostkeeper::daemon::libsecret {
using proto::Error;
using proto::ErrorCode;

namespace {

bool connection_went_stale(const GError* e) {
    if (e->domain == G_DBUS_ERROR) {
        return e->code == G_DBUS_ERROR_SERVICE_UNKNOWN ||
               e->code == G_DBUS_ERROR_NAME_HAS_NO_OWNER || e->code == G_DBUS_ERROR_NO_REPLY ||
               e->code == G_DBUS_ERROR_DISCONNECTED || e->code == G_DBUS_ERROR_UNKNOWN_OBJECT ||
               e->code == G_DBUS_ERROR_UNKNOWN_METHOD;
    }
    if (e->domain == G_IO_ERROR) return e->code == G_IO_ERROR_CLOSED;
    if (e->domain == SECRET_ERROR) return e->code == SECRET_ERROR_NO_SUCH_OBJECT;
    return false;
}

std::string seconds_text(std::chrono::milliseconds timeout) {
    const auto ms = timeout.count();
    return ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
}

}  // namespace

[[noreturn]] void fail(GError* raw, const std::string& context, Bound bound) {
    const ErrorPtr error(raw);
    // A dropped service connection must not be reused for the next call.
    secret_service_disconnect();
    const std::string message =
        raw != nullptr && raw->message != nullptr ? raw->message : "unknown error";
    if (raw != nullptr && raw->domain == G_IO_ERROR && raw->code == G_IO_ERROR_CANCELLED) {
        if (bound.prompt) {
            throw Error(ErrorCode::keyring_locked,
                        context + ": the keyring is locked and was not unlocked in time");
        }
        throw Error(
            ErrorCode::keyring_unavailable,
            context + ": the Secret Service did not answer within " + seconds_text(bound.timeout) +
                " (is gnome-keyring-daemon, or the Secret Service you use, stopped or hung?)");
    }
    const bool stale = raw != nullptr && connection_went_stale(raw);
    if (raw != nullptr && raw->domain == G_DBUS_ERROR &&
        (raw->code == G_DBUS_ERROR_SERVICE_UNKNOWN ||
         raw->code == G_DBUS_ERROR_NAME_HAS_NO_OWNER)) {
        throw StaleConnection(
            ErrorCode::keyring_unavailable,
            "no Secret Service on the session bus (nothing provides org.freedesktop.secrets): "
            "start gnome-keyring-daemon, or another Secret Service such as KeePassXC");
    }
    if (raw != nullptr && raw->domain == SECRET_ERROR && raw->code == SECRET_ERROR_IS_LOCKED) {
        throw Error(
            ErrorCode::keyring_locked,
            context +
                ": the keyring is locked; unlock it (hostkeeper unlock in a terminal, Seahorse, "
                "or logging in to your desktop session) and try again");
    }
    if (raw != nullptr && (raw->domain == G_IO_ERROR || raw->domain == G_DBUS_ERROR) &&
        (message.find("bus") != std::string::npos || message.find("D-Bus") != std::string::npos ||
         message.find("DBUS") != std::string::npos)) {
        const std::string text =
            "cannot reach the D-Bus session bus (" + message +
            "); hostkeeperd needs DBUS_SESSION_BUS_ADDRESS to point at your session bus";
        if (stale) throw StaleConnection(ErrorCode::keyring_unavailable, text);
        throw Error(ErrorCode::keyring_unavailable, text);
    }
    const std::string text = context + ": Secret Service error: " + message;
    if (stale) throw StaleConnection(ErrorCode::keyring_error, text);
    throw Error(ErrorCode::keyring_error, text);
}

ServicePtr connect(const Calls& calls) {
    const Call call(calls.watchdog, calls.plain());
    GError* error = nullptr;
    ServicePtr service(secret_service_get_sync(SECRET_SERVICE_NONE, call.cancellable(), &error));
    if (!service) call.fail(error, "connecting to the Secret Service");
    return service;
}

}  // namespace hostkeeper::daemon::libsecret
