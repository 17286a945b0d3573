#include "proto/json.hpp"

#include <string>

#include "proto/secret.hpp"

namespace hostkeeper::proto {

Json parse_json(std::string_view text, std::size_t max_depth) {
    bool too_deep = false;
    // `depth` counts the containers around the one starting. Returning false
    // makes the parser skip the container without building it; parsing goes
    // on iteratively, so the rest of the input costs no stack either.
    const Json::parser_callback_t limit = [&too_deep, max_depth](int depth,
                                                                 Json::parse_event_t event, Json&) {
        if ((event == Json::parse_event_t::array_start ||
             event == Json::parse_event_t::object_start) &&
            static_cast<std::size_t>(depth) >= max_depth) {
            too_deep = true;
            return false;
        }
        return true;
    };
    Json value;
    try {
        value = Json::parse(text, limit, /*allow_exceptions=*/true);
    } catch (const Json::parse_error& e) {
        // nlohmann's own message quotes the last token read: a token, maybe.
        throw JsonError("not valid JSON (syntax error at byte " + std::to_string(e.byte) + ")");
    } catch (const Json::exception&) {
        // A number past a double's range (1e999) is out_of_range, not a parse_error.
        throw JsonError("not valid JSON (a number is out of range)");
    }
    if (too_deep) {
        scrub(value);
        throw JsonError("JSON nested deeper than " + std::to_string(max_depth) + " levels");
    }
    return value;
}

}  // namespace hostkeeper::proto
