#pragma once
// hostkeeper import [--keep-file]: moves tokens out of credentials.tfrc.json
// into the keyring, through the daemon. Each host is stored, read back and
// compared; only hosts that came back equal leave the file, which is then
// rewritten atomically with mode 0600. A host that fails stays in the file and
// the command exits non-zero. credentials "HOST" blocks in hand-written CLI
// configuration files are reported with file and line, never edited.

#include "helper/client/daemon_client.hpp"

namespace hostkeeper::helper::cli {

struct ImportOptions {
    bool keep_file = false;  // store and verify, but leave the file as it is
};

int run_import(const client::ClientOptions& client, const ImportOptions& options);

}  // namespace hostkeeper::helper::cli
