#pragma once
// A login.v1 authorization server on the tests' HTTPS server
// (support/tls_server), as strict as a real one: the authorize endpoint
// redirects to the redirect_uri with a code and the state; the token
// endpoint checks client_id, redirect_uri and the PKCE verifier against the
// S256 challenge, issues access tokens living `lifetime` seconds with
// refresh tokens, and rotates a refresh token at each use (the old one is
// refused after); an API endpoint accepts only an unexpired access token.
//   GET  /oauth/authorize   302 to redirect_uri?code=..&state=..
//   POST /oauth/token       authorization_code and refresh_token grants
//   GET  /api/whoami        200 with a valid access token, else 401
#include <openssl/evp.h>
#include <openssl/sha.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "https_world.hpp"

namespace hostkeeper::it {

class FakeLogin {
  public:
    static constexpr const char* kClient = "hk-test-client";

    FakeLogin(World& world, const std::string& name, int lifetime_seconds)
        : name_(name + ".localhost"), lifetime_(lifetime_seconds) {
        const nlohmann::json doc = {{"login.v1",
                                     {{"client", kClient},
                                      {"grant_types", {"authz_code"}},
                                      {"authz", "/oauth/authorize"},
                                      {"token", "/oauth/token"},
                                      {"ports", {20000, 20100}}}},
                                    {"modules.v1", "/m/"}};
        world.serve(name, test::json_response(doc.dump()));
        world.server.route(name_, "/oauth/authorize",
                           [this](const test::Request& r) { return authorize(r); });
        world.server.route(name_, "/oauth/token",
                           [this](const test::Request& r) { return token(r); });
        world.server.route(name_, "/api/whoami", [this](const test::Request& r) {
            const std::string bearer = r.authorization.value_or("");
            return valid(bearer.starts_with("Bearer ") ? bearer.substr(7) : "")
                       ? test::json_response(R"({"user":"u-1"})")
                       : test::json_response(R"({"error":"unauthorized"})", 401);
        });
    }

    // Whether `access` is an access token issued here and not expired.
    bool valid(const std::string& access) const {
        const std::lock_guard lock(mutex_);
        const auto found = access_.find(access);
        return found != access_.end() && std::chrono::steady_clock::now() < found->second;
    }
    // Every refresh token issued so far is refused from now on.
    void revoke_refresh_tokens() {
        const std::lock_guard lock(mutex_);
        refresh_.clear();
    }
    unsigned issued() const { return issued_; }
    unsigned refreshes() const { return refreshes_; }

    static std::map<std::string, std::string> form(std::string_view text) {
        std::map<std::string, std::string> out;
        while (!text.empty()) {
            const std::size_t amp = text.find('&');
            const std::string_view pair = text.substr(0, amp);
            text = amp == std::string_view::npos ? std::string_view() : text.substr(amp + 1);
            const std::size_t eq = pair.find('=');
            out[decode(pair.substr(0, eq))] =
                eq == std::string_view::npos ? "" : decode(pair.substr(eq + 1));
        }
        return out;
    }
    static std::string encode(const std::string& text) {
        std::string out;
        for (const char ch : text) {
            const auto c = static_cast<unsigned char>(ch);
            if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
                out += static_cast<char>(c);
            } else {
                char hex[4];
                std::snprintf(hex, sizeof hex, "%%%02X", c);
                out += hex;
            }
        }
        return out;
    }

  private:
    struct Grant {
        std::string challenge;
        std::string redirect_uri;
    };

    static std::string decode(std::string_view text) {
        std::string out;
        for (std::size_t i = 0; i < text.size(); ++i) {
            if (text[i] == '+') {
                out += ' ';
            } else if (text[i] == '%' && i + 2 < text.size()) {
                out +=
                    static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16));
                i += 2;
            } else {
                out += text[i];
            }
        }
        return out;
    }
    static std::string s256(const std::string& verifier) {
        unsigned char digest[SHA256_DIGEST_LENGTH];
        SHA256(reinterpret_cast<const unsigned char*>(verifier.data()), verifier.size(), digest);
        unsigned char b64[64] = {};
        const int n = EVP_EncodeBlock(b64, digest, sizeof digest);
        std::string out(reinterpret_cast<char*>(b64), static_cast<std::size_t>(n));
        while (!out.empty() && out.back() == '=') out.pop_back();
        for (char& c : out) c = c == '+' ? '-' : c == '/' ? '_' : c;
        return out;
    }
    static test::Response oauth_error(const std::string& error, const std::string& why) {
        return test::json_response(
            nlohmann::json{{"error", error}, {"error_description", why}}.dump(), 400);
    }

    test::Response authorize(const test::Request& r) {
        const auto q = form(r.target.substr(r.target.find('?') + 1));
        const std::string redirect = q.count("redirect_uri") ? q.at("redirect_uri") : "";
        const bool ok = q.count("client_id") && q.at("client_id") == kClient &&
                        q.count("response_type") && q.at("response_type") == "code" &&
                        q.count("code_challenge_method") &&
                        q.at("code_challenge_method") == "S256" && q.count("code_challenge") &&
                        q.count("state") && redirect.starts_with("http://localhost:") &&
                        redirect.ends_with("/login");
        if (!ok) return oauth_error("invalid_request", "bad authorization request");
        const std::lock_guard lock(mutex_);
        const std::string code = "code-" + std::to_string(++counter_);
        grants_[code] = {q.at("code_challenge"), redirect};
        return test::redirect(redirect + "?code=" + code + "&state=" + encode(q.at("state")));
    }

    test::Response token(const test::Request& r) {
        if (r.method != "POST" ||
            r.content_type.value_or("") != "application/x-www-form-urlencoded")
            return oauth_error("invalid_request", "POST a form");
        const auto f = form(r.body);
        const auto get = [&f](const char* k) { return f.count(k) ? f.at(k) : std::string(); };
        if (get("client_id") != kClient) return oauth_error("invalid_client", "unknown client");
        const std::lock_guard lock(mutex_);
        if (get("grant_type") == "authorization_code") {
            const auto grant = grants_.find(get("code"));
            if (grant == grants_.end()) return oauth_error("invalid_grant", "unknown code");
            const Grant g = grant->second;
            grants_.erase(grant);
            if (g.redirect_uri != get("redirect_uri"))
                return oauth_error("invalid_grant", "redirect_uri differs");
            if (s256(get("code_verifier")) != g.challenge)
                return oauth_error("invalid_grant", "PKCE verification failed");
            return issue();
        }
        if (get("grant_type") == "refresh_token") {
            if (refresh_.erase(get("refresh_token")) == 0)
                return oauth_error("invalid_grant", "the refresh token is not valid");
            ++refreshes_;
            return issue();
        }
        return oauth_error("unsupported_grant_type", get("grant_type"));
    }

    // Under mutex_.
    test::Response issue() {
        const std::string n = std::to_string(++counter_);
        const std::string access = "acc-tok-" + n + "-" + std::to_string(::getpid());
        const std::string refresh = "ref-tok-" + n + "-" + std::to_string(::getpid());
        access_[access] = std::chrono::steady_clock::now() + std::chrono::seconds(lifetime_);
        refresh_[refresh] = true;
        ++issued_;
        return test::json_response(nlohmann::json{
            {"access_token", access},
            {"token_type", "bearer"},
            {"expires_in", lifetime_},
            {"refresh_token", refresh}}.dump());
    }

    std::string name_;
    int lifetime_;
    mutable std::mutex mutex_;
    unsigned counter_ = 0;
    std::atomic<unsigned> issued_{0};
    std::atomic<unsigned> refreshes_{0};
    std::map<std::string, Grant> grants_;
    std::map<std::string, std::chrono::steady_clock::time_point> access_;
    std::map<std::string, bool> refresh_;
};

}  // namespace hostkeeper::it
