// A module's download location as a routed registry gives it (X-Terraform-Get
// or a 200 body's "location", upstream's text). What the cache fetches is an
// http(s) URL that the location starts with (query aside); what it puts in
// the listener's X-Terraform-Get (file name and suffix) has no byte that
// could end a header line or a URL, nor a path separator in the file name.
#include <string>

#include "daemon/registry_cache/wire_answers.hpp"
#include "fuzz_support.hpp"

using namespace hostkeeper;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string location(fuzz::text_of(data, size));
    const auto archive = daemon::registry_cache::cacheable_module_archive(location);
    if (!archive) return 0;
    fuzz::require(archive->url.rfind("https://", 0) == 0 || archive->url.rfind("http://", 0) == 0,
                  "a cacheable module archive is not fetched over http(s)");
    const std::string fetched = archive->url.substr(0, archive->url.find('?'));
    fuzz::require(location.rfind(fetched, 0) == 0,
                  "the URL fetched is not the start of the location");
    fuzz::require(!archive->filename.empty() && archive->filename != "." &&
                      archive->filename != ".." &&
                      archive->filename.find_first_not_of(
                          "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-_+") ==
                          std::string::npos,
                  "an archive's file name has a character outside [A-Za-z0-9.+_-]");
    for (const char c : archive->suffix) {
        fuzz::require(
            static_cast<unsigned char>(c) > 0x20 && c != 0x7f && c != '"' && c != '\\',
            "an archive's suffix has a space, a control character, a quote or a backslash");
    }
    fuzz::require(archive->suffix.empty() || archive->suffix.rfind("//", 0) == 0 ||
                      archive->suffix.rfind("?archive=", 0) == 0,
                  "an archive's suffix is neither //subdir nor ?archive=");
    return 0;
}
