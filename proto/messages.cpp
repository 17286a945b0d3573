#include "proto/messages.hpp"

#include <array>
#include <utility>

#include "proto/framing.hpp"
#include "proto/secret.hpp"
#include "proto/version.hpp"

namespace hostkeeper::proto {
namespace {

constexpr std::array<std::pair<Op, std::string_view>, 31> kOps{{
    {Op::hello, "hello"},
    {Op::get, "get"},
    {Op::store, "store"},
    {Op::forget, "forget"},
    {Op::status, "status"},
    {Op::flush, "flush"},
    {Op::stop, "stop"},
    {Op::discover, "discover"},
    {Op::module_versions, "module_versions"},
    {Op::module_download, "module_download"},
    {Op::provider_versions, "provider_versions"},
    {Op::provider_package, "provider_package"},
    {Op::provider_fetch, "provider_fetch"},
    {Op::registry_cache_sync, "registry_cache_sync"},
    {Op::registry_run, "registry_run"},
    {Op::registry_run_blocks, "registry_run_blocks"},
    {Op::migrate, "migrate"},
    {Op::unlock, "unlock"},
    {Op::list, "list"},
    {Op::check, "check"},
    {Op::rotate, "rotate"},
    {Op::login_start, "login_start"},
    {Op::login_exchange, "login_exchange"},
    {Op::login_refresh, "login_refresh"},
    {Op::docker_get, "docker_get"},
    {Op::docker_store, "docker_store"},
    {Op::docker_erase, "docker_erase"},
    {Op::docker_list, "docker_list"},
    {Op::git_get, "git_get"},
    {Op::git_store, "git_store"},
    {Op::git_erase, "git_erase"},
}};

}  // namespace

std::string_view to_string(Op op) noexcept {
    for (const auto& [o, name] : kOps) {
        if (o == op) return name;
    }
    return "";
}

std::optional<Op> op_from_string(std::string_view text) noexcept {
    for (const auto& [o, name] : kOps) {
        if (name == text) return o;
    }
    return std::nullopt;
}

Json make_request(Op op) {
    Json request = Json::object();
    request["v"] = kProtocolVersion;
    request["op"] = std::string(to_string(op));
    return request;
}

Json make_ok() {
    Json response = Json::object();
    response["v"] = kProtocolVersion;
    response["ok"] = true;
    return response;
}

Json make_error(ErrorCode code, std::string_view message) {
    Json response = Json::object();
    response["v"] = kProtocolVersion;
    response["ok"] = false;
    response["error"] = {{"code", std::string(to_string(code))}, {"message", std::string(message)}};
    return response;
}

Json parse_payload(std::string_view payload) {
    Json message;
    try {
        message = parse_json(payload);
    } catch (const JsonError& e) {
        throw Error(ErrorCode::bad_request, std::string("message is ") + e.what());
    }
    if (!message.is_object()) {
        scrub(message);
        throw Error(ErrorCode::bad_request, "message is not a JSON object");
    }
    return message;
}

std::string serialize(const Json& message, std::size_t limit) {
    std::string text = message.dump(-1, ' ', false, Json::error_handler_t::replace);
    if (text.size() > limit) {
        const std::size_t size = text.size();
        scrub(text);
        throw Error(ErrorCode::too_large, "message of " + std::to_string(size) +
                                              " bytes is over the frame limit of " +
                                              std::to_string(limit));
    }
    return text;
}

const Json& check_response(const Json& response) {
    const auto ok = response.find("ok");
    if (ok == response.end() || !ok->is_boolean()) {
        throw Error(ErrorCode::bad_request, "response has no boolean \"ok\"");
    }
    if (ok->get<bool>()) return response;
    const auto error = response.find("error");
    if (error == response.end() || !error->is_object()) {
        throw Error(ErrorCode::bad_request, "failed response has no \"error\" object");
    }
    const auto code = error->find("code");
    const auto message = error->find("message");
    const std::string code_text =
        code != error->end() && code->is_string() ? code->get<std::string>() : "";
    const std::string text = message != error->end() && message->is_string()
                                 ? message->get<std::string>()
                                 : "the daemon reported error '" + code_text + "'";
    throw Error(error_code_from_string(code_text).value_or(ErrorCode::internal), text);
}

void validate_credentials(const Json& credentials) {
    if (!credentials.is_object()) {
        throw Error(ErrorCode::bad_request, "credentials must be a JSON object");
    }
    const auto token = credentials.find("token");
    if (token == credentials.end()) {
        throw Error(ErrorCode::bad_request, "credentials object has no \"token\" property");
    }
    if (!token->is_string()) {
        throw Error(ErrorCode::bad_request, "the \"token\" property must be a string");
    }
}

Json parse_credentials(std::string_view text) {
    Json credentials;
    try {
        credentials = parse_json(text);
    } catch (const JsonError& e) {
        throw Error(ErrorCode::bad_request, std::string("credentials are ") + e.what());
    }
    try {
        validate_credentials(credentials);
    } catch (...) {
        scrub(credentials);
        throw;
    }
    std::string compact = credentials.dump();
    const std::size_t size = compact.size();
    scrub(compact);
    if (size > kMaxCredentialsSize) {
        scrub(credentials);
        throw Error(ErrorCode::too_large, "credentials object of " + std::to_string(size) +
                                              " bytes is over the limit of " +
                                              std::to_string(kMaxCredentialsSize));
    }
    return credentials;
}

std::string docker_server_key(std::string_view server) {
    constexpr std::string_view blanks = " \t\r\n";
    const std::size_t first = server.find_first_not_of(blanks);
    if (first == std::string_view::npos) {
        throw Error(ErrorCode::bad_request, "no credentials server URL");
    }
    server = server.substr(first, server.find_last_not_of(blanks) - first + 1);
    if (server.size() > kMaxDockerServerSize) {
        throw Error(ErrorCode::bad_request,
                    "the server URL is over " + std::to_string(kMaxDockerServerSize) + " bytes");
    }
    for (const char c : server) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte < 0x20 || byte == 0x7f) {
            throw Error(ErrorCode::bad_request, "the server URL holds a control character");
        }
    }
    return std::string(server);
}

std::optional<std::string> other_docker_server(std::string_view key) {
    constexpr std::string_view https = "https://";
    std::string other;
    if (key.substr(0, https.size()) == https) {
        std::string_view host = key.substr(https.size());
        if (!host.empty() && host.back() == '/') host.remove_suffix(1);
        if (host.empty() || host.find('/') != std::string_view::npos) return std::nullopt;
        other = std::string(host);
    } else if (!key.empty() && key.find('/') == std::string_view::npos) {
        other = std::string(https) + std::string(key);
    } else {
        return std::nullopt;
    }
    try {
        if (docker_server_key(other) == other) return other;
    } catch (const Error&) {  // NOLINT(bugprone-empty-catch): too long, or blanks: none
    }
    return std::nullopt;
}

}  // namespace hostkeeper::proto
