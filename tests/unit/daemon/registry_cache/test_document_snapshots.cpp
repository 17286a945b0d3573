// The registry cache's answers and failures kept on disk: failure files are
// found by name once, when the snapshots are made; a good answer removes its
// failure and keeps itself when asked to.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <string>

#include "daemon/registry_cache/document_snapshots.hpp"

namespace test_document_snapshots {

using hostkeeper::daemon::registry_cache::DocumentSnapshots;
using hostkeeper::daemon::registry_cache::ListenerResponse;
namespace fs = std::filesystem;

namespace {

std::size_t failure_files(const fs::path& dir) {
    std::size_t n = 0;
    for (const auto& entry : fs::directory_iterator(dir))
        if (entry.path().extension() == ".failed") ++n;
    return n;
}

// The file's inode: a file replaced atomically gets a new one. 0 when absent.
ino_t inode_of(const fs::path& file) {
    struct stat st {};
    return ::stat(file.c_str(), &st) == 0 ? st.st_ino : 0;
}

}  // namespace

TEST_CASE("document snapshots: failures are known by name from the start", "[registry_cache]") {
    const fs::path dir = fs::temp_directory_path() / ("hk-snapshots-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    const DocumentSnapshots::Key key("http://127.0.0.1:585/v1/a.example/modules/n/m/s/versions");
    {
        DocumentSnapshots snapshots(dir);
        CHECK_FALSE(snapshots.load_failure(key));
        snapshots.save_failure(key, "the registry is down", std::chrono::seconds(60));
        const auto kept = snapshots.load_failure(key);
        REQUIRE(kept);
        CHECK(kept->message == "the registry is down");
    }
    // A daemon started later finds the failure kept by the one before.
    DocumentSnapshots later(dir);
    REQUIRE(later.load_failure(key));
    CHECK(failure_files(dir) == 1);
    ListenerResponse good;
    good.body = R"({"modules":[]})";
    later.answered(key, good, true);
    CHECK_FALSE(later.load_failure(key));
    CHECK(failure_files(dir) == 0);
    const auto saved = later.load(key);
    REQUIRE(saved);
    CHECK(saved->body == good.body);
    // An answer not worth keeping forgets the failure and is not written.
    const DocumentSnapshots::Key other(key.text() + "2");
    later.save_failure(other, "down", std::chrono::seconds(60));
    later.answered(other, good, false);
    CHECK_FALSE(later.load_failure(other));
    CHECK_FALSE(later.load(other));
    fs::remove_all(dir);
}

TEST_CASE("document snapshots: an answer the same as last time is not written again",
          "[registry_cache]") {
    const fs::path dir =
        fs::temp_directory_path() / ("hk-snapshots-same-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    const DocumentSnapshots::Key key("http://127.0.0.1:585/v1/a.example/providers/n/t/versions");
    const fs::path file = dir / key.stem();
    CHECK(key.stem().size() == 64);
    ListenerResponse answer;
    answer.body = R"({"versions":[]})";
    {
        DocumentSnapshots snapshots(dir);
        CHECK_FALSE(snapshots.kept(key));
        snapshots.answered(key, answer, false);
        CHECK_FALSE(snapshots.kept(key));  // not asked to keep it
        snapshots.answered(key, answer, true);
        CHECK(snapshots.kept(key));
        CHECK_FALSE(snapshots.kept(DocumentSnapshots::Key(key.text() + "x")));
        const ino_t first = inode_of(file);
        REQUIRE(first != 0);
        // The same answer again: the file stays the one written (no replace).
        snapshots.answered(key, answer, true);
        CHECK(inode_of(file) == first);
        // Another answer replaces it; the one after that, the same, does not.
        answer.body = R"({"versions":[{"version":"1.0.0"}]})";
        snapshots.answered(key, answer, true);
        const ino_t second = inode_of(file);
        CHECK(second != first);
        snapshots.answered(key, answer, true);
        CHECK(inode_of(file) == second);
        REQUIRE(snapshots.load(key));
        CHECK(snapshots.load(key)->body == answer.body);
    }
    // After a restart the file already holds the answer: it is not written again.
    const ino_t kept = inode_of(file);
    DocumentSnapshots later(dir);
    CHECK_FALSE(later.kept(key));  // not known until this daemon writes or finds it
    later.answered(key, answer, true);
    CHECK(inode_of(file) == kept);
    CHECK(later.kept(key));
    fs::remove_all(dir);
}

}  // namespace test_document_snapshots
