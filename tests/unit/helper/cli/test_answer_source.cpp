// hostkeeper discover, module and provider say where an answer came from in
// the same words: one source_text for the three of them.
#include <catch2/catch.hpp>

#include "helper/cli/answer_source.hpp"

namespace test_answer_source {

using hostkeeper::helper::cli::source_text;
using hostkeeper::proto::Json;

TEST_CASE("where an answer came from, in words", "[cli][answer_source]") {
    // Registry and mirror replies always carry age_s and expires_in_s.
    CHECK(source_text(Json{{"source", "network"}, {"age_s", 0}, {"expires_in_s", 300}}) ==
          "fetched now, fresh for 5m0s");
    CHECK(source_text(Json{{"source", "cache"}, {"age_s", 120}, {"expires_in_s", 180}}) ==
          "from cache, fetched 2m0s ago, fresh for 3m0s");
    CHECK(source_text(Json{{"source", "stale"}, {"age_s", 90000}, {"expires_in_s", 0}}) ==
          "STALE, from cache, fetched 1d1h0m0s ago, expired");
    // Discovery replies may lack them; forced services have neither.
    CHECK(source_text(Json{{"source", "forced"}}) == "forced by configuration (no network)");
    CHECK(source_text(Json{{"source", "cache"}}) == "from cache");
    CHECK(source_text(Json{{"source", "network"}, {"expires_in_s", 60}}) ==
          "fetched now, fresh for 1m0s");
}

}  // namespace test_answer_source
