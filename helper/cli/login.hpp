#pragma once
// hostkeeper login HOST [--no-browser] [--wait SECONDS] [--refresh]: logs in
// to HOST with its login.v1 service, as `terraform login` does (OAuth 2.0
// authorization code with PKCE, redirected to a port on 127.0.0.1), the
// tokens kept by the daemon: the daemon makes the authorization URL and
// trades the code for tokens (`login_start`, `login_exchange`), so no token
// passes through this command. The URL is always printed (a headless
// machine opens it elsewhere); a browser is started only with a display and
// without --no-browser. --refresh refreshes a stored login now
// (`login_refresh`). Any other request to the port (another path, another
// state, no code, no HTTP) is answered and ignored until --wait runs out.
// Exit 0 logged in; 3 HOST offers no login.v1 (or, with
// --refresh, no login with a refresh token is stored); 5 no redirect came
// within --wait; 1 the login failed (the server's error is shown).

#include <memory>
#include <string>

#include "helper/client/daemon_client.hpp"

namespace hostkeeper::helper::cli {

struct LoginOptions {
    std::string host;
    bool no_browser = false;
    bool refresh = false;
    int wait_seconds = 300;
};

int run_login(const client::ClientOptions& client, const LoginOptions& options);

}  // namespace hostkeeper::helper::cli
