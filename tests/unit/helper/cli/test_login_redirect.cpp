// The redirect `hostkeeper login` waits for (login_redirect.hpp): the code
// taken, the server's error redirect with this login's state ending the
// login, and every other request told apart with a clear error.
#include <catch2/catch.hpp>
#include <string>

#include "helper/cli/login_redirect.hpp"

namespace test_login_redirect {

using namespace hostkeeper::helper::cli;
using Catch::Contains;

namespace {
std::string get(const std::string& target) {
    return "GET " + target + " HTTP/1.1\r\nHost: localhost:10000\r\n\r\n";
}
}  // namespace

TEST_CASE("the redirect's code is taken when its state is this login's", "[helper][login]") {
    const RedirectRequest r = read_redirect(get("/login?code=c%2B1+x&state=s-1"), "s-1");
    CHECK(r.is_login);
    CHECK(r.code == "c+1 x");
}

TEST_CASE("other paths are not the redirect", "[helper][login]") {
    CHECK_FALSE(read_redirect(get("/favicon.ico"), "s").is_login);
    CHECK_FALSE(read_redirect(get("/loginx?code=a&state=s"), "s").is_login);
}

TEST_CASE("a wrong or missing state, no code and junk are not this login's redirect",
          "[helper][login]") {
    CHECK_THROWS_WITH(read_redirect(get("/login?code=a&state=other"), "s"), Contains("state"));
    CHECK_THROWS_WITH(read_redirect(get("/login?code=a"), "s"), Contains("state"));
    CHECK_THROWS_WITH(read_redirect(get("/login?state=s"), "s"), Contains("no authorization code"));
    CHECK_THROWS_WITH(read_redirect(get("/login?code=&state=s"), "s"),
                      Contains("no authorization code"));
    CHECK_THROWS_WITH(read_redirect(get("/login?code=a&code=b&state=s"), "s"), Contains("twice"));
    CHECK_THROWS_WITH(read_redirect(get("/login?code=%zz&state=s"), "s"), Contains("%-escape"));
    CHECK_THROWS_WITH(read_redirect(get("/login?code=%4&state=s"), "s"), Contains("%-escape"));
    CHECK_THROWS_WITH(read_redirect("POST /login?code=a&state=s HTTP/1.1\r\n\r\n", "s"),
                      Contains("not a GET"));
    CHECK_THROWS_WITH(read_redirect("\x16\x03\x01 junk", "s"), Contains("not HTTP"));
    CHECK_THROWS_WITH(read_redirect("", "s"), Contains("not HTTP"));
    // Each is a RedirectError (answered 400, the wait goes on), never LoginRefused.
    CHECK_THROWS_AS(read_redirect(get("/login?code=a&state=other"), "s"), RedirectError);
    CHECK_THROWS_AS(read_redirect("GET /login?state=s", "s"), RedirectError);
}

TEST_CASE("an error redirect ends the login only with this login's state", "[helper][login]") {
    CHECK_THROWS_AS(read_redirect(get("/login?error=access_denied&state=s"), "s"), LoginRefused);
    CHECK_THROWS_WITH(
        read_redirect(
            get("/login?error=access_denied&error_description=the+user%0Asaid+no&state=s"), "s"),
        Contains("refused the login: access_denied: the user said no"));
    // A forged one (another state, or none) is not the server's answer.
    CHECK_THROWS_AS(read_redirect(get("/login?error=access_denied&state=other"), "s"),
                    RedirectError);
    CHECK_THROWS_AS(read_redirect(get("/login?error=access_denied"), "s"), RedirectError);
}

}  // namespace test_login_redirect
