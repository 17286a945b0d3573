// An OCI image manifest or index, as a fleet registry returns it (the first
// byte chooses which is read). What reads, written again and read back, is
// the same; every digest read is a sha256 digest; no list is over its cap.
#include <string>

#include "daemon/fleet/oci_manifest.hpp"
#include "fuzz_support.hpp"

using namespace hostkeeper;
using namespace hostkeeper::daemon::fleet;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::string_view text = fuzz::text_of(data + 1, size - 1);
    try {
        if ((data[0] & 1) == 0) {
            const Manifest manifest = read_manifest(text);
            fuzz::require(manifest.layers.size() <= kMaxDescriptors, "over the layer cap");
            fuzz::require(sha256_digest(manifest.config.digest), "a config digest not sha256");
            for (const Descriptor& layer : manifest.layers)
                fuzz::require(sha256_digest(layer.digest), "a layer digest not sha256");
            const std::string written = write_manifest(manifest);
            fuzz::require(write_manifest(read_manifest(written)) == written,
                          "a manifest written and read again changed");
        } else {
            const Index index = read_index(text);
            fuzz::require(index.manifests.size() <= kMaxDescriptors, "over the manifest cap");
            const std::string written = write_index(index);
            fuzz::require(write_index(read_index(written)) == written,
                          "an index written and read again changed");
            const Index merged = provider_index(index, Descriptor{}, Platform{"linux", "amd64"});
            fuzz::require(platform_entry(merged, Platform{"linux", "amd64"}).has_value() ||
                              merged.manifests.size() > index.manifests.size(),
                          "a platform's entry was not added");
        }
    } catch (const ManifestError&) {
    }
    return 0;
}
