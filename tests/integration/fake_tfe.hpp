#pragma once
// A TFE-like API on the tests' HTTPS server (support/tls_server): the
// documented account and authentication-token endpoints of HCP Terraform and
// Terraform Enterprise (tfe.v2 at /api/v2/, JSON:API), enforcing what a real
// one does: an unknown, revoked or expired token gets 401; creating a token
// needs a valid one; destroying one revokes it.
//   GET    /api/v2/account/details                        the user of the token
//   GET    /api/v2/users/user-1/authentication-tokens     list (metadata: expired-at, ...)
//   POST   /api/v2/users/user-1/authentication-tokens     create (expired-at kept)
//   GET    /api/v2/authentication-tokens/ID               show
//   DELETE /api/v2/authentication-tokens/ID               destroy: 204
// Knobs make it fail on purpose: creating answers `create_status`, and
// tokens it created may be refused (`refuse_created`).
#include <algorithm>
#include <atomic>
#include <ctime>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "https_world.hpp"

namespace hostkeeper::it {

class FakeTfe {
  public:
    struct Token {
        std::string id;
        std::string secret;
        std::string expired_at;  // RFC 3339, "" for none
        std::string description;
        bool created = false;  // made through the API (not given at the start)
        bool revoked = false;
    };

    static constexpr const char* kUser = "user-1";
    static constexpr const char* kTokens = "/api/v2/users/user-1/authentication-tokens";

    // Serves tfe.v2 on NAME.localhost of `world`'s server; `given` tokens
    // (id -> secret) are valid from the start.
    FakeTfe(World& world, const std::string& name, const std::map<std::string, std::string>& given)
        : world_(world), name_(name + ".localhost") {
        for (const auto& [id, secret] : given)
            tokens_[id] = Token{id, secret, "", "", false, false};
        world.serve(name, test::json_response(R"({"tfe.v2":"/api/v2/","modules.v1":"/m/"})"));
        world.server.route(name_, "/api/v2/account/details",
                           [this](const test::Request& r) { return account(r); });
        world.server.route(name_, kTokens, [this](const test::Request& r) { return tokens(r); });
        for (const auto& [id, secret] : given) add_route(id);
    }

    std::atomic<unsigned> create_status{201};
    // When above 0, a created token lives at most this many seconds, whatever
    // expired-at asked for (a server whose policy caps token lifetimes).
    std::atomic<int> max_lifetime_s{0};
    std::atomic<bool> refuse_created{false};

    // Gives a token an expiry (RFC 3339), as the list shows it.
    void set_expiry(const std::string& id, const std::string& expired_at) {
        const std::lock_guard lock(mutex_);
        tokens_.at(id).expired_at = expired_at;
    }

    Token token(const std::string& id) const {
        const std::lock_guard lock(mutex_);
        return tokens_.at(id);
    }
    std::size_t count() const {
        const std::lock_guard lock(mutex_);
        return tokens_.size();
    }
    // Whether `secret` would be accepted now.
    bool valid(const std::string& secret) const {
        const std::lock_guard lock(mutex_);
        return find(secret) != nullptr;
    }

  private:
    static test::Response api(const nlohmann::json& body, unsigned status = 200) {
        test::Response out = test::json_response(body.dump(), status);
        out.headers = {{"Content-Type", "application/vnd.api+json"}};
        return out;
    }
    static test::Response error(unsigned status, const std::string& detail) {
        return api(
            {{"errors",
              {{{"status", std::to_string(status)}, {"title", "error"}, {"detail", detail}}}}},
            status);
    }
    static std::string now_utc(std::time_t later = 0) {
        return utc_in(std::chrono::seconds(later));
    }
    static nlohmann::json document(const Token& t, bool with_secret) {
        nlohmann::json attributes{
            {"created-at", "2026-01-01T00:00:00.000Z"},
            {"last-used-at", nullptr},
            {"description", t.description},
            {"token", with_secret ? nlohmann::json(t.secret) : nlohmann::json(nullptr)},
            {"expired-at",
             t.expired_at.empty() ? nlohmann::json(nullptr) : nlohmann::json(t.expired_at)}};
        return {{"id", t.id}, {"type", "authentication-tokens"}, {"attributes", attributes}};
    }

    // The live token of a request's "Authorization: Bearer ..." (mutex held).
    const Token* caller(const test::Request& r) const {
        if (!r.authorization || r.authorization->rfind("Bearer ", 0) != 0) return nullptr;
        return find(r.authorization->substr(7));
    }
    const Token* find(const std::string& secret) const {
        for (const auto& [id, t] : tokens_) {
            if (t.secret != secret || t.revoked) continue;
            // Same-format UTC timestamps compare as text.
            if (!t.expired_at.empty() && t.expired_at <= now_utc()) return nullptr;
            if (t.created && refuse_created.load()) return nullptr;
            return &t;
        }
        return nullptr;
    }

    test::Response account(const test::Request& r) const {
        const std::lock_guard lock(mutex_);
        if (r.method != "GET") return error(405, "method not allowed");
        if (caller(r) == nullptr) return error(401, "unauthorized");
        return api(
            {{"data",
              {{"id", kUser}, {"type", "users"}, {"attributes", {{"username", "hk-rotor"}}}}}});
    }

    test::Response tokens(const test::Request& r) {
        const std::lock_guard lock(mutex_);
        if (caller(r) == nullptr) return error(401, "unauthorized");
        if (r.method == "GET") {
            nlohmann::json list = nlohmann::json::array();
            for (const auto& [id, t] : tokens_)
                if (!t.revoked) list.push_back(document(t, false));
            const std::size_t total = list.size();
            return api({{"data", list},
                        {"meta", {{"pagination", {{"current-page", 1}, {"total-count", total}}}}}});
        }
        if (r.method != "POST") return error(405, "method not allowed");
        if (create_status.load() != 201)
            return error(create_status.load(), "the token service is down");
        if (r.content_type != "application/vnd.api+json")
            return error(415, "Content-Type must be application/vnd.api+json");
        const nlohmann::json body = nlohmann::json::parse(r.body, nullptr, false);
        if (!body.is_object() ||
            body.value("/data/type"_json_pointer, "") != "authentication-tokens")
            return error(422, "data.type must be authentication-tokens");
        std::string expires = body.value("/data/attributes/expired-at"_json_pointer, "");
        if (expires.size() != 20 || expires <= now_utc())
            return error(422, "expired-at must be a time in the future");
        if (const int cap = max_lifetime_s.load(); cap > 0)
            expires = std::min(expires, now_utc(cap));
        const std::string id = "at-new" + std::to_string(++made_);
        Token t{id,      "tfe-secret-" + id + "-" + std::to_string(world_.server.port()),
                expires, body.value("/data/attributes/description"_json_pointer, ""),
                true,    false};
        tokens_[id] = t;
        add_route(id);
        return api({{"data", document(t, true)}}, 201);
    }

    test::Response one(const std::string& id, const test::Request& r) {
        const std::lock_guard lock(mutex_);
        if (caller(r) == nullptr) return error(401, "unauthorized");
        const auto it = tokens_.find(id);
        if (it == tokens_.end() || it->second.revoked) return error(404, "not found");
        if (r.method == "GET") return api({{"data", document(it->second, false)}});
        if (r.method != "DELETE") return error(405, "method not allowed");
        it->second.revoked = true;
        test::Response gone;
        gone.status = 204;
        return gone;
    }

    void add_route(const std::string& id) {
        world_.server.route(name_, "/api/v2/authentication-tokens/" + id,
                            [this, id](const test::Request& r) { return one(id, r); });
    }

    World& world_;
    std::string name_;
    mutable std::mutex mutex_;
    std::map<std::string, Token> tokens_;
    int made_ = 0;
};

}  // namespace hostkeeper::it
