#pragma once
// Owners of the GLib and libsecret objects the Secret Service adapter
// holds: each is released when dropped.

// The D-Bus path functions (secret-paths.h: search and read by object path,
// without an item proxy each) are behind this acknowledgement.
#define SECRET_API_SUBJECT_TO_CHANGE 1
#include <libsecret/secret.h>

#include <memory>
#include <utility>
#include <vector>

namespace hostkeeper::daemon::libsecret {

template <typename T, void (*Free)(T*)>
struct Deleter {
    void operator()(T* p) const {
        if (p != nullptr) Free(p);
    }
};
inline void unref_value(SecretValue* p) {
    secret_value_unref(p);
}
using ErrorPtr = std::unique_ptr<GError, Deleter<GError, g_error_free>>;
using HashTablePtr = std::unique_ptr<GHashTable, Deleter<GHashTable, g_hash_table_unref>>;
using ValuePtr = std::unique_ptr<SecretValue, Deleter<SecretValue, unref_value>>;
using StrvPtr = std::unique_ptr<gchar*, Deleter<gchar*, g_strfreev>>;
template <typename T>
struct GObjectPtr {
    struct Unref {
        void operator()(T* p) const {
            if (p != nullptr) g_object_unref(p);
        }
    };
    using type = std::unique_ptr<T, Unref>;
};
using ServicePtr = GObjectPtr<SecretService>::type;
using CollectionPtr = GObjectPtr<SecretCollection>::type;
using ItemPtr = GObjectPtr<SecretItem>::type;
using CancellablePtr = GObjectPtr<GCancellable>::type;

// Owns a GList of SecretItem references.
class ItemList {
  public:
    explicit ItemList(GList* list) : list_(list) {}
    ItemList(const ItemList&) = delete;
    ItemList& operator=(const ItemList&) = delete;
    ItemList(ItemList&& other) noexcept : list_(std::exchange(other.list_, nullptr)) {}
    ItemList& operator=(ItemList&& other) noexcept {
        if (this != &other) {
            g_list_free_full(list_, g_object_unref);
            list_ = std::exchange(other.list_, nullptr);
        }
        return *this;
    }
    ~ItemList() { g_list_free_full(list_, g_object_unref); }
    GList* get() const { return list_; }
    bool empty() const { return list_ == nullptr; }
    void append(SecretItem* item) { list_ = g_list_append(list_, item); }
    std::vector<SecretItem*> items() const {
        std::vector<SecretItem*> out;
        for (GList* l = list_; l != nullptr; l = l->next)
            out.push_back(static_cast<SecretItem*>(l->data));
        return out;
    }

  private:
    GList* list_;
};

}  // namespace hostkeeper::daemon::libsecret
