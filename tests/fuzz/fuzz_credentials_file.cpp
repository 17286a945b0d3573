// credentials.tfrc.json as `terraform login` leaves it and import reads it.
// A file accepted lists its hosts, each with its credentials.
#include "fuzz_support.hpp"
#include "helper/terraform_config/plaintext_credentials.hpp"
#include "proto/file_io.hpp"

using namespace hostkeeper;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        const helper::terraform_config::CredentialsFile file("credentials.tfrc.json",
                                                             fuzz::text_of(data, size));
        for (const auto& host : file.hosts()) (void)file.credentials(host).dump();
    } catch (const proto::FileError& e) {
        fuzz::require(std::string_view(e.what()).rfind("credentials.tfrc.json ", 0) == 0,
                      "a credentials file error does not name the file");
    }
    return 0;
}
