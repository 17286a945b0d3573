// The stand-in daemon's answer to a list request, shared by the list and
// check tests: three hosts (one locked), a docker item, a git item and a
// rejected host.
#pragma once

#include <string>

#include "proto/json.hpp"
#include "proto/messages.hpp"

namespace hk_unit {

namespace proto = hostkeeper::proto;

inline proto::Json host_entry(const char* host, const char* stored, bool locked) {
    return proto::Json{
        {"host", host},
        {"label", std::string("hostkeeper: ") + host},
        {"stored", stored ? proto::Json(stored) : proto::Json(nullptr)},
        {"fields", locked ? proto::Json(nullptr) : proto::Json::array({"token", "user"})},
        {"locked", locked}};
}

inline proto::Json list_reply() {
    proto::Json reply = proto::make_ok();
    reply["backend"] = "secret-service";
    reply["hosts"] =
        proto::Json::array({host_entry("app.terraform.io", "2026-11-20T09:12:44Z", false),
                            host_entry("my-registry.example.com:8443", nullptr, false),
                            host_entry("xn--bcher-kva.example.com", nullptr, true)});
    reply["docker"] =
        proto::Json::array({proto::Json{{"server", "registry.example.com:5000"},
                                        {"username", "alice"},
                                        {"label", "hostkeeper docker: registry.example.com:5000"},
                                        {"stored", "2026-11-21T17:01:02Z"}}});
    reply["git"] = proto::Json::array(
        {proto::Json{{"url", "https://alice@gitlab.example.com/group/net.git"},
                     {"protocol", "https"},
                     {"host", "gitlab.example.com"},
                     {"path", "group/net.git"},
                     {"username", "alice"},
                     {"label", "hostkeeper git: https://gitlab.example.com/group/net.git"},
                     {"stored", "2026-11-22T08:00:00Z"}}});
    reply["rejected"] =
        proto::Json::array({proto::Json{{"host", "tfe.example.com"},
                                        {"url", "https://tfe.example.com/api/v2/account/details"},
                                        {"status", 401},
                                        {"age_s", 120}}});
    return reply;
}

}  // namespace hk_unit
