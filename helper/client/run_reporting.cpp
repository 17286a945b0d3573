#include "helper/client/run_reporting.hpp"

#include <cstdio>
#include <exception>

#include "helper/client/exit_codes.hpp"
#include "helper/client/launcher.hpp"
#include "helper/client/printable_output.hpp"
#include "proto/error.hpp"
#include "proto/socket_path.hpp"

namespace hostkeeper::helper::client {

int run_reporting(const std::string& program, const std::function<int()>& body) {
    const auto fail = [&](const char* message, int code) {
        // The message may carry text from elsewhere (a command's stderr, a
        // host name): it goes through the printable filter.
        print_printable(stderr, "%s: %s\n", program.c_str(), message);
        return code;
    };
    try {
        return body();
    } catch (const proto::Error& e) {
        return fail(e.what(), exit_code_for(e.code()));
    } catch (const NoDaemon& e) {
        return fail(e.what(), kExitNoDaemon);
    } catch (const proto::UnsafeSocket& e) {
        return fail(e.what(), kExitNoDaemon);
    } catch (const std::exception& e) {
        return fail(e.what(), kExitFailed);
    }
}

}  // namespace hostkeeper::helper::client
