// The expiry warnings file's text (warned_stages.hpp): no I/O here, so the
// fuzz tree compiles this alone.
#include <array>
#include <chrono>
#include <optional>
#include <utility>

#include "daemon/credentials/warned_stages.hpp"
#include "proto/error.hpp"
#include "proto/json.hpp"

namespace hostkeeper::daemon::credentials {
using proto::Error;
using proto::ErrorCode;
using proto::Json;

namespace {

constexpr std::array kStages{ExpiryStage::within_30_days, ExpiryStage::within_7_days,
                             ExpiryStage::within_1_day, ExpiryStage::expired};

Error bad(const std::string& what) {
    return Error(ErrorCode::bad_request, "the expiry warnings file: " + what);
}

ExpiryStage stage_named(const std::string& host, const std::string& name) {
    for (const ExpiryStage stage : kStages)
        if (to_string(stage) == name) return stage;
    throw bad("the stage of \"" + host +
              "\" is not one of within_30_days, within_7_days, "
              "within_1_day, expired");
}

}  // namespace

WarnedHosts parse_warned_stages(std::string_view text) {
    if (text.size() > kMaxWarnedStagesFile) throw bad("larger than 256 KiB");
    Json document;
    try {
        document = proto::parse_json(text, 4);
    } catch (const proto::JsonError& e) {
        throw bad(e.what());
    }
    if (!document.is_object() || document.value("v", Json()) != 1)
        throw bad("not an object with \"v\": 1");
    const auto hosts = document.find("hosts");
    if (hosts == document.end() || !hosts->is_object()) throw bad("no \"hosts\" object");
    WarnedHosts out;
    for (const auto& [host, entry] : hosts->items()) {
        if (!entry.is_object()) throw bad("\"" + host + "\" is not an object");
        const auto at = entry.find("expires_at");
        const auto stage = entry.find("stage");
        if (at == entry.end() || !at->is_string() || stage == entry.end() || !stage->is_string())
            throw bad("\"" + host + "\" needs the strings expires_at and stage");
        const std::optional<WallTime> expires = parse_rfc3339(at->get_ref<const std::string&>());
        if (!expires || rfc3339_text(*expires).size() != 20)
            throw bad("the expires_at of \"" + host + "\" is not RFC 3339 of years 0000-9999");
        out[host] = WarnedStage{to_second(*expires),
                                stage_named(host, stage->get_ref<const std::string&>())};
    }
    return out;
}

std::string warned_stages_text(const WarnedHosts& hosts) {
    Json list = Json::object();
    for (const auto& [host, warned] : hosts)
        list[host] = {{"expires_at", rfc3339_text(warned.expires)},
                      {"stage", std::string(to_string(warned.stage))}};
    return Json{{"v", 1}, {"hosts", std::move(list)}}.dump() + "\n";
}

}  // namespace hostkeeper::daemon::credentials
