#pragma once
// How hostkeeper doctor's checks report, so that checks kept in files of
// their own (the registry cache's, pass's, git's) print as doctor does.

#include <functional>
#include <string>

namespace hostkeeper::helper::cli {

// ok, warn (worth knowing, not a failure), fail (with the fix), skip (not
// checked, and why).
struct DoctorSink {
    std::function<void(const std::string&)> ok;
    std::function<void(const std::string&)> warn;
    std::function<void(const std::string&, const std::string&)> fail;
    std::function<void(const std::string&)> skip = [](const std::string&) {};
};

}  // namespace hostkeeper::helper::cli
