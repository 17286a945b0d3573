// The daemon's record of the expiry warnings it gave
// (daemon/credentials/warned_stages.hpp), read back at its next start from
// beside its socket. The input is the file's text.
#include <string>

#include "daemon/credentials/warned_stages.hpp"
#include "fuzz_support.hpp"
#include "proto/error.hpp"

using namespace hostkeeper;
namespace credentials = daemon::credentials;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = fuzz::text_of(data, size);
    credentials::WarnedHosts hosts;
    try {
        hosts = credentials::parse_warned_stages(text);
    } catch (const proto::Error& e) {
        fuzz::require(e.code() == proto::ErrorCode::bad_request, "a bad file is not bad_request");
        return 0;
    }
    // What is written reads back as the same hosts, stages and expiries.
    const credentials::WarnedHosts again =
        credentials::parse_warned_stages(credentials::warned_stages_text(hosts));
    fuzz::require(again.size() == hosts.size(), "a written file reads back other hosts");
    for (const auto& [host, warned] : hosts) {
        const auto it = again.find(host);
        fuzz::require(it != again.end() && it->second.stage == warned.stage &&
                          it->second.expires == warned.expires,
                      "a written file reads back another stage or expiry");
    }
    return 0;
}
