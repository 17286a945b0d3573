// hostkeeperd's config.toml, applied on top of the defaults, and the
// durations it (and the command line) holds. Anything wrong must be a
// ConfigError that names it: nothing else may come out.
#include <chrono>
#include <variant>

#include "daemon/app/config.hpp"
#include "daemon/app/settings.hpp"
#include "fuzz_support.hpp"

using namespace hostkeeper;
using std::chrono::seconds;

namespace {

// The daemon arms steady_clock timers and computes deadlines (now + ttl +
// stale_if_error) from these: each must convert to the clock's nanoseconds,
// with room to spare for such sums, without overflowing.
void check_duration(seconds d) {
    constexpr auto limit =
        std::chrono::duration_cast<seconds>(std::chrono::steady_clock::duration::max()) / 4;
    fuzz::require(d.count() >= 0 && d <= limit, "a configured duration would overflow the clock");
}

void check_durations(daemon::app::Config& c) {
    for (const daemon::app::Setting& setting : daemon::app::settings()) {
        if (const auto* d = std::get_if<daemon::app::DurationField>(&setting.field))
            check_duration(d->get(c));
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(fuzz::text_of(data, size));
    try {
        daemon::app::Config config;
        daemon::app::apply_toml(config, text, "config.toml");
        check_durations(config);
    } catch (const daemon::app::ConfigError& e) {
        fuzz::require(std::string_view(e.what()).rfind("config.toml", 0) == 0,
                      "a config error does not name the file");
    }
    try {
        check_duration(daemon::app::parse_duration(text));
    } catch (const daemon::app::ConfigError&) {
    }
    return 0;
}
