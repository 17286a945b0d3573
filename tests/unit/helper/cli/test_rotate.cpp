// hostkeeper rotate's reading of the daemon's `rotate` answers: the line
// printed and the exit status (docs/manual/commands.md).
#include <catch2/catch.hpp>

#include "helper/cli/rotate.hpp"
#include "helper/client/exit_codes.hpp"

namespace test_rotate {

namespace cli = hostkeeper::helper::cli;
namespace client = hostkeeper::helper::client;
using Json = hostkeeper::proto::Json;

TEST_CASE("rotate: what is printed and the exit status of each answer", "[helper][cli]") {
    cli::RotateOutcome out = cli::rotate_outcome({{"host", "tfe.example"},
                                                  {"result", "rotated"},
                                                  {"token_id", "at-2"},
                                                  {"expires_at", "2026-12-31T00:00:00Z"},
                                                  {"revoked", "at-1"}});
    CHECK(out.exit_code == client::kExitOk);
    CHECK(out.text ==
          "tfe.example: rotated: new token at-2, expires 2026-12-31T00:00:00Z; previous token "
          "at-1 revoked");
    out = cli::rotate_outcome({{"host", "tfe.example"},
                               {"result", "rotated"},
                               {"token_id", "at-2"},
                               {"expires_at", "2026-12-31T00:00:00Z"},
                               {"warning", "revoking token at-1 failed"}});
    CHECK(out.exit_code == client::kExitOk);
    CHECK_THAT(out.text, Catch::Contains("not made by hostkeeper") &&
                             Catch::EndsWith("\nwarning: revoking token at-1 failed"));

    const auto failed = [](const char* step, Json extra = Json::object()) {
        Json answer{
            {"host", "tfe.example"}, {"result", "failed"}, {"step", step}, {"message", "why"}};
        answer.update(extra);
        return cli::rotate_outcome(answer);
    };
    CHECK(failed("credentials").exit_code == client::kExitNotFound);
    CHECK(failed("service").exit_code == client::kExitNotFound);
    CHECK(failed("account", {{"status", 401}}).exit_code == client::kExitRejected);
    CHECK(failed("account", {{"status", 500}}).exit_code == client::kExitFailed);
    CHECK(failed("create", {{"status", 401}}).exit_code == client::kExitFailed);
    CHECK(failed("verify").exit_code == client::kExitFailed);
    CHECK(failed("create").text == "tfe.example: not rotated (create): why");
}

}  // namespace test_rotate
