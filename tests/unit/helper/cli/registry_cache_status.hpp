// hostkeeperd's registry cache status as the design contract gives it (a
// held listener, three hosts of which two are routed, an archive store),
// shared by the status line's and setup's tests.
#pragma once

#include "proto/json.hpp"

namespace hk_unit {

inline hostkeeper::proto::Json contract_cache() {
    using hostkeeper::proto::Json;
    return Json{
        {"enabled", true},
        {"listen", "127.0.0.1:585"},
        {"held", true},
        {"held_by", "hostkeeper-portd"},
        {"error", nullptr},
        {"tfrc_files", Json::array({"/home/u/.terraform.d/hostkeeper.tfrc"})},
        {"hosts", Json::array({Json{{"host", "a.example"},
                                    {"source", "named"},
                                    {"routed", true},
                                    {"services", Json::array({"modules.v1", "providers.v1"})},
                                    {"reason", nullptr}},
                               Json{{"host", "xn--bcher-kva.example"},
                                    {"source", "named"},
                                    {"routed", false},
                                    {"services", Json::array()},
                                    {"reason", "discovery failed: no such host"}},
                               Json{{"host", "learned.example"},
                                    {"source", "learned"},
                                    {"routed", true},
                                    {"services", Json::array({"providers.v1"})},
                                    {"reason", nullptr}}})},
        {"requests", 12},
        {"refused", 1},
        {"archives",
         Json{{"count", 2}, {"bytes", 2048}, {"max_bytes", 4096}, {"downloads", 2}, {"hits", 5}}}};
}

}  // namespace hk_unit
