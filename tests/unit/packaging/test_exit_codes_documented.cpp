// The documented exit codes against helper/client/exit_codes.hpp: the
// manual's tables (docs/manual/exit-codes.md) list every exit code and every
// daemon error's exit code as the code has them, and the man pages and
// hostkeeper --help's epilogue name no exit code the programs do not have.
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "helper/cli/help_footer.hpp"
#include "helper/client/exit_codes.hpp"
#include "packaging/source_file.hpp"
#include "proto/error.hpp"

namespace test_exit_codes_documented {

using namespace hostkeeper;
using namespace hostkeeper::helper::client;

namespace {

using hostkeeper::test::source_file;

// The rows "| FIRST | SECOND |" of the markdown table whose header row is
// `header`, as FIRST -> SECOND (a FIRST in backticks without them).
std::map<std::string, std::string> table_rows(const std::string& page, const std::string& header) {
    const auto at = page.find("\n" + header + "\n");
    REQUIRE(at != std::string::npos);
    std::map<std::string, std::string> rows;
    std::istringstream lines(page.substr(at + header.size() + 2));
    const std::regex row(R"(^\| `?([^`|]+)`? \| (.*) \|$)");
    std::smatch m;  // the separator row, |---|---|, is no row
    for (std::string line; std::getline(lines, line) && line.rfind('|', 0) == 0;) {
        if (std::regex_match(line, m, row)) rows[m[1].str()] = m[2].str();
    }
    return rows;
}

// A man page's EXIT STATUS section, roff's "\-" as "-".
std::string exit_status_section(const std::string& page) {
    const auto begin = page.find("\n.SH EXIT STATUS\n");
    REQUIRE(begin != std::string::npos);
    const auto end = page.find("\n.SH ", begin + 1);
    return std::regex_replace(page.substr(begin, end - begin), std::regex(R"(\\-)"), "-");
}

// The exit codes a man page's EXIT STATUS names: a number that starts the
// section's text or a clause ("0 done; 1 the daemon ...", ", 127 when").
std::set<int> named_codes(const std::string& section) {
    std::set<int> codes;
    const std::regex clause(R"((\n|; |\. |, )([0-9]{1,3})[ \n])");
    std::smatch m;
    for (std::string rest = section; std::regex_search(rest, m, clause); rest = m.suffix()) {
        codes.insert(std::stoi(m[2].str()));
    }
    return codes;
}

// The exit codes hostkeeper --help's epilogue names: a number that starts a
// clause after "Exit codes:" ("0 ok, 1 the daemon ...; exec: ..."), and both
// of a pair ("126/127 when").
std::set<int> footer_codes(const std::string& footer) {
    std::set<int> codes;
    const std::regex clause(R"((: |, |; )([0-9]{1,3})(/([0-9]{1,3}))? )");
    std::smatch m;
    for (std::string rest = footer; std::regex_search(rest, m, clause); rest = m.suffix()) {
        codes.insert(std::stoi(m[2].str()));
        if (m[4].matched) codes.insert(std::stoi(m[4].str()));
    }
    return codes;
}

const std::set<int> kAllCodes{
    kExitOk,      kExitFailed, kExitUsage,    kExitNotFound,      kExitNoDaemon,
    kExitTimeout, kExitBusy,   kExitRejected, kExitCannotExecute, kExitCommandNotFound};

}  // namespace

TEST_CASE("the manual lists every exit code, and no other", "[packaging][exit]") {
    const std::map<std::string, std::string> rows =
        table_rows(source_file("docs/manual/exit-codes.md"), "| code | meaning |");
    std::set<int> documented;
    for (const auto& [code, meaning] : rows) {
        INFO("docs/manual/exit-codes.md: " << code << " " << meaning);
        CHECK_FALSE(meaning.empty());
        documented.insert(std::stoi(code));
    }
    CHECK(documented == kAllCodes);
    REQUIRE(rows.count(std::to_string(kExitTimeout)) == 1);
    CHECK(rows.at(std::to_string(kExitTimeout)).find("--timeout") != std::string::npos);
    REQUIRE(rows.count(std::to_string(kExitBusy)) == 1);
    CHECK(rows.at(std::to_string(kExitBusy)).find("busy") != std::string::npos);
    REQUIRE(rows.count(std::to_string(kExitRejected)) == 1);
    CHECK(rows.at(std::to_string(kExitRejected)).find("check") != std::string::npos);
}

TEST_CASE("the manual gives each daemon error the exit code the clients use", "[packaging][exit]") {
    const std::map<std::string, std::string> rows =
        table_rows(source_file("docs/manual/exit-codes.md"), "| error code | exit code |");
    std::set<std::string> known;
    for (int i = 0; i <= static_cast<int>(proto::ErrorCode::internal); ++i) {
        const auto code = static_cast<proto::ErrorCode>(i);
        const std::string name(proto::to_string(code));
        known.insert(name);
        INFO("docs/manual/exit-codes.md: " << name);
        REQUIRE(rows.count(name) == 1);
        CHECK(rows.at(name) == std::to_string(exit_code_for(code)));
    }
    for (const auto& [name, exit_code] : rows) {
        INFO("docs/manual/exit-codes.md names the error " << name);
        CHECK(known.count(name) == 1);
        CHECK(proto::error_code_from_string(name).has_value());
    }
}

TEST_CASE("the man pages name only the exit codes the programs have", "[packaging][exit]") {
    const std::set<int> hostkeeper =
        named_codes(exit_status_section(source_file("packaging/man/hostkeeper.1")));
    CHECK(hostkeeper == kAllCodes);
    const std::set<int> helper = named_codes(
        exit_status_section(source_file("packaging/man/terraform-credentials-hostkeeper.1")));
    const std::set<int> helper_codes{kExitOk,       kExitFailed,  kExitUsage,
                                     kExitNoDaemon, kExitTimeout, kExitBusy};
    CHECK(helper == helper_codes);
    const std::set<int> docker = named_codes(
        exit_status_section(source_file("packaging/man/docker-credential-hostkeeper.1")));
    CHECK(docker == std::set<int>{kExitOk, kExitFailed});
}

TEST_CASE("hostkeeper --help names every exit code, and no other", "[packaging][exit]") {
    const std::string footer = helper::cli::kHelpFooter;
    INFO(footer);
    REQUIRE(footer.rfind("Exit codes: ", 0) == 0);
    CHECK(footer_codes(footer) == kAllCodes);
}

}  // namespace test_exit_codes_documented
