#include "daemon/credentials/expiry_notice.hpp"

#include "daemon/credentials/token_expiry.hpp"

namespace hostkeeper::daemon::credentials {

ExpiryNotice expiry_notice(const ExpiryAlert& alert) {
    const std::string& host = alert.host;
    ExpiryNotice out;
    const std::string when = rfc3339_text(alert.at);
    if (alert.stage == ExpiryStage::expired) {
        out.summary = "The token of " + host + " has expired";
        out.body = "It expired at " + when + " and is no longer handed out.";
    } else {
        out.summary = "The token of " + host + " expires in " + time_left(alert.at, alert.now);
        out.body = "It expires at " + when + ".";
    }
    if (alert.renewal == Renewal::login) {
        out.body += " Refreshing it failed: run hostkeeper login " + host + ".";
    } else if (alert.renewal != Renewal::person) {
        out.body += " For a new one run " + renew_command(host, alert.renewal) + ".";
    } else {
        out.body += " For a new one run hostkeeper rotate " + host +
                    " (HCP Terraform, Terraform Enterprise) or terraform login " + host + ".";
    }
    return out;
}

}  // namespace hostkeeper::daemon::credentials
