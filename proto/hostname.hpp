#pragma once
// Registry hostname normalization, shared by daemon, helper and command line,
// so that every spelling of one host names one keyring item and one cache
// entry. Follows what Terraform's svchost package does (see
// docs/specs/client-behaviour.md): IDNA (UTS #46, non-transitional) through
// libidn2, lowercase, ":443" dropped, other ports kept.

#include <string>
#include <string_view>

namespace hostkeeper::proto {

// "Bücher.Example.COM:443" -> "xn--bcher-kva.example.com";
// "tfe.corp.example:8443" -> "tfe.corp.example:8443".
// Throws Error{bad_host} with a message naming what is wrong.
std::string normalize_hostname(std::string_view input);

// The Unicode form of a normalized hostname, for people (svchost's
// ForDisplay): "xn--bcher-kva.example.com:8443" -> "bücher.example.com:8443".
// A-labels ("xn--") are decoded with libidn2's to-unicode (loaded only when
// there is one); any other host, or one libidn2 cannot decode, is returned
// as it is. Never throws for bad input: it is for display only.
std::string display_hostname(std::string_view host);

}  // namespace hostkeeper::proto
