#pragma once
// Each kind of item as the Secret Service keeps it: its schema, the
// attribute that holds its key, the attribute that holds its username (a
// kind that has one), its label, and how messages name it. The one place
// that knows the kinds; the adapter's operations read it.
//
// Terraform credentials: schema io.hostkeeper.Credentials, attribute "host"
// (the normalized ASCII hostname), label "hostkeeper: HOST", the
// credentials JSON object as the secret. Docker credentials: schema
// io.hostkeeper.DockerCredentials, attributes "server" and "username"
// (so that listing reads no secret), label "hostkeeper docker: SERVER", the
// secret as the secret. git items: schema io.hostkeeper.GitCredentials,
// attribute "url" (the item's key, "https://USER@HOST[/PATH]") and, for
// searches by other tools, "protocol", "host", "path" ("" for none) and
// "username", label "hostkeeper git: https://HOST[/PATH]", the item's JSON
// object as the secret.

#include <string>
#include <utility>
#include <vector>

#include "daemon/credentials/keyring.hpp"
#include "daemon/libsecret/glib_handles.hpp"

namespace hostkeeper::daemon::libsecret {

struct ItemSchema {
    const SecretSchema* schema;
    const char* key_attribute;       // "host"
    const char* username_attribute;  // nullptr: the kind has no username
    const char* label_prefix;        // "hostkeeper: ", followed by the key
    // The context of error messages, each followed by the key but `listing`.
    const char* searching;  // a lookup's search
    const char* looking;    // a lookup's unlocking of hidden items
    const char* reading;    // reading the secret
    const char* storing;
    const char* removing;
    const char* remove_searching;  // a removal's search
    const char* listing;
    // The attributes written besides the key's and the username's, made from
    // the key; nullptr: none.
    std::vector<std::pair<const char*, std::string>> (*more_attributes)(const std::string& key);
    // The label after the prefix, made from the key; nullptr: the key.
    std::string (*shown_key)(const std::string& key);
};

const ItemSchema& item_schema(credentials::ItemKind kind);

}  // namespace hostkeeper::daemon::libsecret
