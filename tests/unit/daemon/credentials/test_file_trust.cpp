// Which paths another user could change: modes, sticky directories,
// symbolic links, PATH's entries, and the overflow uid where root is
// unmapped. (Files of another uid: the integration group [token-trust].)
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "daemon/credentials/file_trust.hpp"

namespace test_file_trust {

using namespace hostkeeper::daemon::credentials;
namespace fs = std::filesystem;

namespace {

// A private directory of the test's, removed at the end.
struct Tree {
    Tree() {
        char pattern[] = "/tmp/hk-trust.XXXXXX";
        root = ::mkdtemp(pattern);
    }
    ~Tree() { fs::remove_all(root); }
    Tree(const Tree&) = delete;
    Tree& operator=(const Tree&) = delete;
    // An executable file at `relative`, its directories made 0700.
    fs::path program(const std::string& relative) const {
        const fs::path path = root / relative;
        fs::create_directories(path.parent_path());
        for (fs::path dir = path.parent_path(); dir != root; dir = dir.parent_path())
            ::chmod(dir.c_str(), 0700);
        std::ofstream(path) << "#!/bin/sh\necho tok\n";
        ::chmod(path.c_str(), 0700);
        return path;
    }
    fs::path root;
};

}  // namespace

TEST_CASE("the overflow uid may own / and the directories above the home only",
          "[daemon][credentials]") {
    const fs::path home = "/home/me";
    CHECK(overflow_may_own("/", home));
    CHECK(overflow_may_own("/home", home));
    CHECK(overflow_may_own("/home/", home));
    CHECK_FALSE(overflow_may_own("/home/me", home));
    CHECK_FALSE(overflow_may_own("/home/other", home));
    CHECK_FALSE(overflow_may_own("/tmp", home));
    CHECK_FALSE(overflow_may_own("/usr/bin", home));
    CHECK_FALSE(overflow_may_own("/ho", home));
    const fs::path deep = "/srv/users/me";
    CHECK(overflow_may_own("/srv", deep));
    CHECK(overflow_may_own("/srv/users", deep));
    CHECK_FALSE(overflow_may_own("/srv/other", deep));
    CHECK(overflow_may_own("/", ""));
    CHECK_FALSE(overflow_may_own("/home", ""));
}

TEST_CASE("where root is unmapped, a directory of the overflow uid elsewhere is refused",
          "[daemon][credentials]") {
    // Root's files stand for the overflow uid here: a view where root is unmapped.
    UidView view;
    view.me = 4242;
    view.overflow = 0;
    view.home = "/etc/hk-home/me";
    // /etc is above the home: accepted; the file itself is not a directory.
    CHECK_THAT(untrusted_path("/etc/passwd", FileOwner::you_or_root, view),
               Catch::Contains("/etc/passwd is owned by uid 0 (the overflow uid") &&
                   Catch::Contains("not by you (uid 4242)"));
    view.home = "/home/me";
    CHECK_THAT(untrusted_path("/etc/passwd", FileOwner::you_or_root, view),
               Catch::StartsWith("/etc is owned by uid 0 (the overflow uid"));
    // With root mapped, root's directories and files are fine.
    view.overflow.reset();
    view.root = 0;
    CHECK(untrusted_path("/etc/passwd", FileOwner::you_or_root, view).empty());
    CHECK_THAT(untrusted_path("/etc/passwd", FileOwner::you, view),
               Catch::Contains("/etc/passwd is owned by uid 0, not by you (uid 4242)"));
}

TEST_CASE("modes: group- or world-writable refused, sticky directories accepted",
          "[daemon][credentials]") {
    const Tree tree;
    const fs::path program = tree.program("a/b/tool");
    CHECK(untrusted_path(program, FileOwner::you).empty());
    ::chmod(program.c_str(), 0720);
    CHECK_THAT(untrusted_path(program, FileOwner::you),
               Catch::Equals(program.string() + " is group-writable (chmod g-w " +
                             program.string() + ")"));
    ::chmod(program.c_str(), 0702);
    CHECK_THAT(untrusted_path(program, FileOwner::you), Catch::Contains("is world-writable"));
    ::chmod(program.c_str(), 0700);
    const fs::path a = tree.root / "a";
    ::chmod(a.c_str(), 0777);
    CHECK_THAT(untrusted_path(program, FileOwner::you),
               Catch::StartsWith(a.string() + " is world-writable"));
    ::chmod(a.c_str(), 01777);  // sticky, and yours
    CHECK(untrusted_path(program, FileOwner::you).empty());
    ::chmod(a.c_str(), 0700);
    CHECK_THAT(untrusted_path(tree.root / "a" / "missing", FileOwner::you),
               Catch::Contains("missing cannot be checked (No such file"));
}

TEST_CASE("symbolic links: the link's directory and its target's are both checked",
          "[daemon][credentials]") {
    const Tree tree;
    const fs::path program = tree.program("safe/tool");
    const fs::path loose = tree.root / "loose";
    fs::create_directory(loose);
    ::chmod(loose.c_str(), 0770);
    // A link to a trusted program, in a directory others may write.
    fs::create_symlink(program, loose / "tool");
    CHECK_THAT(untrusted_path(loose / "tool", FileOwner::you),
               Catch::StartsWith(loose.string() + " is group-writable"));
    // A trusted link to a program in a directory others may write.
    const fs::path inner = tree.program("loose/inner/tool");
    ::chmod(loose.c_str(), 0770);
    fs::create_symlink(inner, tree.root / "safe" / "via");
    CHECK_THAT(untrusted_path(tree.root / "safe" / "via", FileOwner::you),
               Catch::StartsWith(loose.string() + " is group-writable"));
    // Relative links and "..", resolved as the kernel does.
    fs::create_symlink("../safe/tool", tree.root / "safe" / "again");
    CHECK(untrusted_path(tree.root / "safe" / "again", FileOwner::you).empty());
    ::chmod(loose.c_str(), 0700);
    CHECK(untrusted_path(tree.root / "safe" / "via", FileOwner::you).empty());
    // A directory that links to itself.
    fs::create_symlink("loop", tree.root / "loop");
    CHECK_THAT(untrusted_path(tree.root / "loop" / "x", FileOwner::you),
               Catch::Contains("too many symbolic links"));
}

TEST_CASE("PATH: the first entry holding the name decides; relative entries are skipped",
          "[daemon][credentials]") {
    const Tree tree;
    const fs::path good = tree.program("good/hk-tool");
    const fs::path bad = tree.program("bad/hk-tool");
    const fs::path bad_dir = bad.parent_path();
    ::chmod(bad_dir.c_str(), 0770);
    const std::string path = "relative:" + bad_dir.string() + ":" + good.parent_path().string();
    TrustedProgram found = find_trusted_program("hk-tool", path);
    CHECK_FALSE(found.path);
    CHECK(found.refused == bad.string() + " is not trusted: " + bad_dir.string() +
                               " is group-writable (chmod g-w " + bad_dir.string() +
                               "): another user could replace the program");
    // An untrusted entry without the name is passed over.
    fs::remove(bad);
    found = find_trusted_program("hk-tool", path);
    REQUIRE(found.path);
    CHECK(*found.path == good);
    // A name with a '/' is not searched.
    CHECK(find_trusted_program(good.string(), "").path == good);
    CHECK_THAT(find_trusted_program("hk-none", path).refused,
               Catch::Contains("hk-none is not found in PATH"));
    // The working directory is never searched.
    const fs::path before = fs::current_path();
    fs::current_path(good.parent_path());
    CHECK_FALSE(find_trusted_program("hk-tool", ":relative").path);
    fs::current_path(before);
    // Root's programs are trusted where root is root.
    CHECK(find_trusted_program("sh", "/bin").path == fs::path("/bin/sh"));
}

}  // namespace test_file_trust
