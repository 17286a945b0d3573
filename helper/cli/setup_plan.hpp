#pragma once
// What hostkeeper setup is about to do, gathered before it does anything:
// steps (each printed as "would ..." in a dry run), notes, and refusals that
// stop it with nothing changed.

#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "proto/json.hpp"

namespace hostkeeper::helper::cli {

struct Step {
    std::string would;                   // "would add ..."
    std::string done;                    // "added ..."
    std::function<proto::Json()> apply;  // does it; returns the record for --undo (or null)
};

struct Plan {
    std::vector<Step> steps;
    std::vector<std::string> notes;
    std::vector<std::string> refusals;
    std::set<std::filesystem::path> seen;  // links and files already planned (tools may share them)
};

}  // namespace hostkeeper::helper::cli
