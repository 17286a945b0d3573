#include "helper/cli/answer_source.hpp"

#include "helper/client/common_cli.hpp"

namespace hostkeeper::helper::cli {

std::string source_text(const proto::Json& response) {
    const std::string source = response.value("source", "?");
    if (source == "forced") return "forced by configuration (no network)";
    std::string text = source == "network" ? "fetched now"
                       : source == "cache" ? "from cache"
                                           : "STALE, from cache";
    if (response.contains("age_s") && source != "network") {
        text += ", fetched " + client::duration_text(response.value("age_s", 0LL)) + " ago";
    }
    if (response.contains("expires_in_s")) {
        const long long expires = response.value("expires_in_s", 0LL);
        text += expires > 0 ? ", fresh for " + client::duration_text(expires) : ", expired";
    }
    return text;
}

}  // namespace hostkeeper::helper::cli
