#pragma once
// TF_TOKEN_* environment variables, named as Terraform and OpenTofu read
// them (collectCredentialsFromEnv in internal/command/cliconfig/credentials.go
// of both, identical): strip "TF_TOKEN_", replace "__" with "-", then "_"
// with ".", then svchost.ForDisplay and ForComparison (here:
// proto::normalize_hostname, the same normalization). A variable whose name
// names no valid host is ignored by both tools. Differences left: svchost
// also takes a port of 0 or below ("host:-1"), which no stored host can
// have (normalize_hostname refuses it), so such a name decodes to nothing.
// OpenTofu's collectCredentialsFromEnv and its svchost fork
// (opentofu/svchost) are the same code.
//
// Encoding is the reverse, from the normalized (ASCII, punycode) host:
// "-" -> "__", "." -> "_"; a port keeps its ":" (svchost reads "host:port"),
// so "registry.example.com:8443" is TF_TOKEN_registry_example_com:8443, a
// name execve and bash pass on but dash (Debian's /bin/sh) drops. Every name
// is checked by decoding it back; a host whose name would not decode to
// itself cannot be encoded.

#include <optional>
#include <string>
#include <string_view>

namespace hostkeeper::helper::terraform_config {

inline constexpr std::string_view kTokenVariablePrefix = "TF_TOKEN_";

// The normalized host Terraform reads a token for from a variable named
// `name` ("TF_TOKEN_..."), or nullopt when Terraform ignores the variable
// (another prefix, or no valid host). Never throws.
std::optional<std::string> decode_token_variable(std::string_view name);

// The variable name for `host` (a normalized hostname, as the daemon lists
// it), or nullopt when no name decodes back to exactly `host`.
std::optional<std::string> encode_token_variable(std::string_view host);

// False for a name that is not a shell identifier (a host with a port gives
// one with ':'): POSIX shells such as dash drop such variables from the
// environment they pass on.
bool shell_portable(std::string_view name);

}  // namespace hostkeeper::helper::terraform_config
