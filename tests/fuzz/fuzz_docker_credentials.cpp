// docker-credential-hostkeeper's input: `store`'s JSON and `get`/`erase`'s
// server URL (and its other spelling), as a Docker client writes them to the
// helper; and what `get` prints from an accepted store. Selector byte: even for store, odd for the
// server URL.
#include <string>

#include "fuzz_support.hpp"
#include "helper/docker_credential_helper/docker_credentials.hpp"
#include "proto/error.hpp"
#include "proto/json.hpp"
#include "proto/messages.hpp"

using namespace hostkeeper;
namespace docker = helper::docker_credential_helper;

namespace {

bool has_control(std::string_view text) {
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte < 0x20 || byte == 0x7f) return true;
    }
    return false;
}

void check_server(const std::string& server) {
    fuzz::require(!server.empty() && server.size() <= proto::kMaxDockerServerSize,
                  "an accepted server URL is empty or over 1024 bytes");
    fuzz::require(!has_control(server), "an accepted server URL holds a control character");
    fuzz::require(proto::docker_server_key(server) == server,
                  "an accepted server URL is not its own key");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::string_view text = fuzz::text_of(data + 1, size - 1);
    try {
        if (data[0] % 2 == 0) {
            const docker::DockerCredentials c = docker::parse_store_input(text);
            check_server(c.server);
            fuzz::require(!c.username.empty() && c.username.size() <= proto::kMaxDockerUsernameSize,
                          "an accepted username is empty or over 1024 bytes");
            // What get prints from them is JSON holding them again (the
            // parser accepted only UTF-8, so nothing was replaced).
            const std::string out =
                docker::format_credentials(c.server, c.username, c.secret.view());
            fuzz::require(!out.empty() && out.back() == '\n',
                          "get's output does not end in a newline");
            const proto::Json back = proto::parse_json(out);
            fuzz::require(back.size() == 3 && back.at("ServerURL") == c.server &&
                              back.at("Username") == c.username &&
                              back.at("Secret") == std::string(c.secret.view()),
                          "get's output does not read back as the stored credentials");
        } else {
            const std::string server = docker::parse_server_input(text);
            check_server(server);
            if (const auto other = hostkeeper::proto::other_docker_server(server)) {
                check_server(*other);
                fuzz::require(*other != server, "a server URL's other spelling is itself");
            }
        }
    } catch (const proto::Error& e) {
        fuzz::require(e.code() == proto::ErrorCode::bad_request,
                      "a Docker input error is not bad_request");
        const std::string_view message = e.what();
        fuzz::require(!message.empty() && !has_control(message),
                      "a Docker input error's message is empty or spans lines");
    }
    return 0;
}
