// hostkeeperd's config.toml, applied on top of the defaults, and the
// durations it (and the command line) holds. Anything wrong must be a
// ConfigError that names it: nothing else may come out.
#include "config.hpp"
#include "fuzz_support.hpp"

using namespace hostkeeper;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(fuzz::text_of(data, size));
    try {
        daemon::Config config;
        daemon::apply_toml(config, text, "config.toml");
        fuzz::require(config.idle_timeout.count() >= 0 && config.read_timeout.count() >= 0,
                      "a configured duration is negative");
    } catch (const daemon::ConfigError& e) {
        fuzz::require(std::string_view(e.what()).rfind("config.toml", 0) == 0,
                      "a config error does not name the file");
    }
    try {
        fuzz::require(daemon::parse_duration(text).count() >= 0, "a duration is negative");
    } catch (const daemon::ConfigError&) {
    }
    return 0;
}
