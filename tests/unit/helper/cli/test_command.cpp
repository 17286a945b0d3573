// The command table: every command once, in `hostkeeper --help`'s order,
// with the daemon start and default deadline each always had; and the bash
// completion offers exactly the table's commands.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "helper/cli/command.hpp"

namespace test_command {

namespace cli = hostkeeper::helper::cli;
using namespace std::chrono_literals;

namespace {

struct Table {
    CLI::App app{"test", "hostkeeper"};
    std::vector<std::unique_ptr<cli::Command>> commands = cli::commands();
    std::vector<CLI::App*> added;
    Table() {
        app.require_subcommand(1);
        app.add_option("--timeout", timeout);
        for (auto& command : commands) added.push_back(command->add_to(app));
    }
    // The command `args` name, parsed; nullptr when it does not parse.
    cli::Command* parse(std::vector<std::string> args) {
        std::reverse(args.begin(), args.end());  // CLI11 takes them last first
        try {
            app.parse(args);
        } catch (const CLI::ParseError&) {
            return nullptr;
        }
        for (std::size_t i = 0; i < added.size(); ++i)
            if (added[i]->parsed()) return commands[i].get();
        return nullptr;
    }
    double timeout = 30;
};

std::vector<std::string> names(const Table& table) {
    std::vector<std::string> out;
    for (const CLI::App* sub : table.added) out.push_back(sub->get_name());
    return out;
}

// The words of `local commands="..."` in the completion script.
std::vector<std::string> completed_commands() {
    std::ifstream in(std::string(HK_SOURCE_DIR) + "/packaging/completion/hostkeeper.bash");
    std::string line;
    const std::string marker = "local commands=\"";
    while (std::getline(in, line)) {
        const auto at = line.find(marker);
        if (at == std::string::npos) continue;
        std::istringstream words(
            line.substr(at + marker.size(), line.rfind('"') - at - marker.size()));
        std::vector<std::string> out;
        for (std::string word; words >> word;) out.push_back(word);
        return out;
    }
    return {};
}

}  // namespace

TEST_CASE("command table: every command once, in help order", "[cli][command]") {
    const Table table;
    CHECK(names(table) == std::vector<std::string>{"status", "flush", "start", "stop", "discover",
                                                   "module", "provider", "setup", "import",
                                                   "doctor", "unlock", "migrate", "list", "check",
                                                   "rotate", "login", "exec", "token"});
}

TEST_CASE("command table: the bash completion lists exactly the table's commands",
          "[cli][command][completion]") {
    const Table table;
    std::vector<std::string> table_names = names(table);
    std::vector<std::string> completed = completed_commands();
    REQUIRE_FALSE(completed.empty());
    std::sort(table_names.begin(), table_names.end());
    std::sort(completed.begin(), completed.end());
    CHECK(completed == table_names);
}

TEST_CASE("command table: who starts the daemon, and the deadlines without --timeout",
          "[cli][command]") {
    const std::set<std::string> reporting{"status", "flush", "stop", "doctor"};
    const std::map<std::vector<std::string>, std::chrono::milliseconds> long_ones{
        {{"unlock"}, 1h},
        {{"migrate", "--to", "pass"}, 10min},
        {{"provider", "fetch", "hashicorp/random", "3.6.0"}, 15min}};
    for (const auto& [args, timeout] : long_ones) {
        Table table;
        const cli::Command* command = table.parse(args);
        REQUIRE(command != nullptr);
        CHECK(command->default_timeout() == timeout);
        CHECK(command->starts_daemon());
    }
    const std::vector<std::vector<std::string>> others{
        {"status"},
        {"flush"},
        {"start"},
        {"stop"},
        {"discover", "app.terraform.io"},
        {"login", "app.example.com"},
        {"module", "versions", "hashicorp/consul/aws"},
        {"provider", "versions", "hashicorp/random"},
        {"provider", "package", "hashicorp/random", "3.6.0"},
        {"setup"},
        {"import"},
        {"doctor"},
        {"list"},
        {"check"},
        {"exec", "--", "env"},
        {"token", "app.terraform.io"}};
    for (const auto& args : others) {
        Table table;
        const cli::Command* command = table.parse(args);
        INFO(args.front());
        REQUIRE(command != nullptr);
        CHECK_FALSE(command->default_timeout());
        CHECK(command->starts_daemon() == (reporting.count(args.front()) == 0));
    }
}

}  // namespace test_command
