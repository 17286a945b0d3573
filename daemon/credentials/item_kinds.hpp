#pragma once
// Each kind of keyring item, described once: its key, how the Secret
// Service keeps it (schema, attributes, label, the context of messages),
// where and how pass keeps it (entry folder and name, the entry's text),
// and what `migrate` copies of it and reports. The backends (libsecret's
// schemas, pass's layout) and migration read this table and know nothing
// else of a kind; adding one is its line in ItemKind, its description in
// item_kinds.cpp, and its view (terraform_items.hpp, docker_items.hpp,
// git_items.hpp). The names here are what users' keyrings and password
// stores already hold: they never change.
//
// Terraform credentials: schema io.hostkeeper.Credentials, attribute "host"
// (the normalized ASCII hostname), label "hostkeeper: HOST", the
// credentials JSON object as the secret; pass entry hostkeeper/HOST
// (proto/pass_store_layout.hpp) holding that object. Docker credentials:
// schema io.hostkeeper.DockerCredentials, attributes "server" and
// "username" (so that listing reads no secret), label "hostkeeper docker:
// SERVER", the secret as the secret; pass entry hostkeeper/docker/B64
// holding {"ServerURL":...,"Username":...,"Secret":...}. git items: schema
// io.hostkeeper.GitCredentials, attribute "url" (the item's key,
// "https://USER@HOST[/PATH]") and, for searches by other tools,
// "protocol", "host", "path" ("" for none) and "username", label
// "hostkeeper git: https://HOST[/PATH]", the item's JSON object as the
// secret; pass entry hostkeeper/git/B64 holding that object with "url": the
// key added. B64 is the key in unpadded base64url.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proto/secret.hpp"

namespace hostkeeper::daemon::credentials {

class Keyring;
struct ItemKey;
struct StoredItem;

enum class ItemKind {
    terraform,  // a normalized host's credentials JSON object
    docker,     // a Docker server's username and secret (docker-credential-hostkeeper)
    git,        // a git credential (git-credential-hostkeeper): its URL -> password JSON
};

// The kind as the Secret Service keeps it.
struct SecretServiceItems {
    const char* schema_name;  // "io.hostkeeper.Credentials"
    // The schema's attributes, the key's first, then the username's, then
    // the others (more_attributes), as the schema was registered.
    std::vector<const char*> schema_attributes;
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

// The kind as a pass store keeps it.
struct PassEntries {
    // The entries' folder inside hostkeeper/; empty: hostkeeper/ itself.
    std::string_view folder;
    // true: an entry is named by its key in unpadded base64url (the key may
    // hold any character); false: as proto::pass_entry_name names a host.
    bool encoded;
    // encoded: whether a key read back from a name is one hostkeeper
    // writes (others are not its entries), and the refusal of a key too
    // long for a file name.
    bool (*writes_key)(std::string_view key);
    const char* too_long;
    // The entry's text for an item, and the item of an entry's text (as
    // pass's entry_text() trimmed it); the latter throws
    // proto::Error{keyring_error} naming `entry` when the text is not the
    // kind's or another key's.
    proto::Secret (*text_of)(const StoredItem& item);
    StoredItem (*item_of)(const std::string& entry, const ItemKey& key, proto::Secret text);
    bool username_inside;  // listing reads each entry for its username
};

// What `migrate` copies of the kind: its items listed by key, each read as
// one comparable text, written from that text, removed; and how it names
// them in its log and its reply.
struct MigratedItems {
    const char* what;          // "host", in messages about one item
    const char* many;          // "hosts", in the summary
    const char* reply_moved;   // the reply's list of moved keys: "migrated"
    const char* reply_failed;  // a failure's member naming the key: "host"
    std::vector<std::string> (*list)(Keyring& keyring);
    std::optional<proto::Secret> (*read)(Keyring& keyring, const std::string& key);
    void (*write)(Keyring& keyring, const std::string& key, const proto::Secret& text);
    bool (*remove)(Keyring& keyring, const std::string& key);
};

struct ItemKindDescription {
    ItemKind kind;
    SecretServiceItems secret_service;
    PassEntries pass;
    MigratedItems migration;
};

// Every kind, in ItemKind's order (the order migrate copies and reports them).
std::span<const ItemKindDescription> item_kinds();
const ItemKindDescription& describe(ItemKind kind);

}  // namespace hostkeeper::daemon::credentials
