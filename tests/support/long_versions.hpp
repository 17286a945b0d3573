#pragma once
// A provider registry's versions document long enough that the daemon passes
// its list by reference (PROTOCOL.md, Passed documents): 300 versions of 10
// platforms each, newest 3.299.0, with one warning.

#include <string>

namespace hostkeeper::test {

inline std::string long_provider_versions_document() {
    std::string body = R"({"versions":[)";
    for (int v = 0; v < 300; ++v) {
        if (v > 0) body += ',';
        body +=
            R"({"version":"3.)" + std::to_string(v) + R"(.0","protocols":["5.0"],"platforms":[)";
        for (int p = 0; p < 10; ++p) {
            if (p > 0) body += ',';
            body += R"({"os":"linux","arch":"arch)" + std::to_string(p) + R"("})";
        }
        body += "]}";
    }
    return body + R"(],"warnings":["big"]})";
}

}  // namespace hostkeeper::test
