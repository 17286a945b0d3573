#include "daemon/pass/gpg_session.hpp"

#include <sys/types.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "daemon/pass/store_layout.hpp"
#include "proto/error.hpp"
#include "proto/messages.hpp"

namespace hostkeeper::daemon::pass {
using proto::Error;
using proto::ErrorCode;
using proto::Secret;

namespace {

void initialize_once() {
    static std::once_flag once;
    std::call_once(once, [] {
        gpgme_check_version(nullptr);
        (void)gpgme_engine_check_version(GPGME_PROTOCOL_OpenPGP);
    });
}

std::string text_of(gpgme_error_t err) {
    char buffer[256] = {};
    gpgme_strerror_r(err, buffer, sizeof buffer);
    return buffer;
}

struct DataDeleter {
    void operator()(gpgme_data_t d) const {
        if (d != nullptr) gpgme_data_release(d);
    }
};
using DataPtr = std::unique_ptr<std::remove_pointer_t<gpgme_data_t>, DataDeleter>;

struct KeyDeleter {
    void operator()(gpgme_key_t k) const {
        if (k != nullptr) gpgme_key_unref(k);
    }
};
using KeyPtr = std::unique_ptr<std::remove_pointer_t<gpgme_key_t>, KeyDeleter>;

struct CtxDeleter {
    void operator()(gpgme_ctx_t c) const {
        if (c != nullptr) gpgme_release(c);
    }
};
using CtxPtr = std::unique_ptr<std::remove_pointer_t<gpgme_ctx_t>, CtxDeleter>;

// Why gpg cannot encrypt to `id` and what fixes it, from the key itself:
// expired or revoked, or valid without a usable encryption subkey (a
// sign-only key, or its encryption subkeys expired or revoked). Empty when
// gpg knows no single such key.
std::string unusable_key_advice(gpgme_ctx_t ctx, const std::string& id) {
    if (gpgme_op_keylist_start(ctx, id.c_str(), 0) != 0) return {};
    gpgme_key_t raw = nullptr;
    const gpgme_error_t err = gpgme_op_keylist_next(ctx, &raw);
    const KeyPtr key(raw);
    gpgme_key_t extra = nullptr;
    const bool more = err == 0 && gpgme_op_keylist_next(ctx, &extra) == 0;
    if (extra != nullptr) gpgme_key_unref(extra);
    gpgme_op_keylist_end(ctx);
    if (err != 0 || more || key == nullptr || key->fpr == nullptr) return {};
    const std::string fpr = key->fpr;
    const std::string other = "or re-encrypt the store to another key (pass init KEYID)";
    if (key->revoked != 0) return "the key " + fpr + " is revoked; " + other;
    if (key->expired != 0) {
        return "the key " + fpr + " has expired; renew it (gpg --quick-set-expire " + fpr +
               " 1y, and its subkeys: gpg --quick-set-expire " + fpr + " 1y '*') " + other;
    }
    if (key->disabled != 0) return "the key " + fpr + " is disabled; enable it " + other;
    if (key->can_encrypt == 0) {
        return "the key " + fpr +
               " has no usable encryption subkey (none, or only expired or revoked ones); add "
               "one (gpg --quick-add-key " +
               fpr + " rsa3072 encr) " + other;
    }
    return {};
}

// gpg's plaintext, written into memory reserved up front (so that it is
// never reallocated, leaving copies behind) and scrubbed with the Secret.
struct PlainSink {
    std::string buffer;
    bool overflow = false;
};
constexpr std::size_t kMaxPlaintext = proto::kMaxCredentialsSize + 4096;

ssize_t sink_write(void* handle, const void* data, size_t size) {
    auto* sink = static_cast<PlainSink*>(handle);
    if (sink->buffer.size() + size > kMaxPlaintext) {
        sink->overflow = true;
        errno = EFBIG;
        return -1;
    }
    sink->buffer.append(static_cast<const char*>(data), size);
    return static_cast<ssize_t>(size);
}

bool is_passphrase_refusal(gpgme_err_code_t code) {
    return code == GPG_ERR_CANCELED || code == GPG_ERR_FULLY_CANCELED ||
           code == GPG_ERR_NO_PIN_ENTRY || code == GPG_ERR_NO_PASSPHRASE ||
           code == GPG_ERR_BAD_PASSPHRASE;
}

bool is_agent_failure(gpgme_err_code_t code) {
    return code == GPG_ERR_NO_AGENT || code == GPG_ERR_ASS_CONNECT_FAILED;
}

[[noreturn]] void engine_failure(gpgme_error_t err, const std::string& doing) {
    const gpgme_err_code_t code = gpgme_err_code(err);
    if (code == GPG_ERR_INV_ENGINE || code == GPG_ERR_ENOENT || code == GPG_ERR_NOT_FOUND) {
        throw Error(ErrorCode::keyring_unavailable,
                    doing + ": gpg cannot be run (" + text_of(err) + "); install gnupg");
    }
    if (is_agent_failure(code)) {
        throw Error(ErrorCode::keyring_unavailable, doing + ": gpg-agent cannot be reached (" +
                                                        text_of(err) +
                                                        "); check `gpg-connect-agent /bye`");
    }
    throw Error(ErrorCode::keyring_error, doing + ": " + text_of(err));
}

std::string locked_message(const std::string& entry, const std::string& keyids) {
    return "the gpg key " + keyids + " that " + entry +
           " is encrypted to needs its passphrase, and gpg-agent has none cached (hostkeeperd "
           "cannot show a pinentry): run `hostkeeper unlock` in a terminal, then try again";
}

CtxPtr new_context() {
    initialize_once();
    gpgme_ctx_t raw = nullptr;
    if (const gpgme_error_t err = gpgme_new(&raw); err != 0) engine_failure(err, "starting GPGME");
    return CtxPtr(raw);
}

}  // namespace

std::string gpgme_version() {
    initialize_once();
    const char* v = gpgme_check_version(nullptr);
    return v != nullptr ? v : "unknown";
}

GpgSession::GpgSession(const GpgOptions& options) {
    CtxPtr ctx = new_context();
    gpgme_error_t err = gpgme_set_protocol(ctx.get(), GPGME_PROTOCOL_OpenPGP);
    if (err == 0) err = gpgme_set_pinentry_mode(ctx.get(), GPGME_PINENTRY_MODE_CANCEL);
    if (err == 0 && options.homedir)
        err = gpgme_ctx_set_engine_info(ctx.get(), GPGME_PROTOCOL_OpenPGP, nullptr,
                                        options.homedir->c_str());
    if (err == 0 && options.trust_model)
        err = gpgme_set_ctx_flag(ctx.get(), "trust-model", options.trust_model->c_str());
    if (err != 0) engine_failure(err, "setting up gpg");
    gpgme_set_armor(ctx.get(), options.armor ? 1 : 0);
    gpgme_set_offline(ctx.get(), 1);
    ctx_ = ctx.release();
}

GpgSession::~GpgSession() {
    if (ctx_ != nullptr) gpgme_release(ctx_);
}

Decrypted GpgSession::decrypt(const std::string& ciphertext, const std::string& entry) {
    const std::string doing = "reading " + entry + " from the password store";
    gpgme_data_t raw_in = nullptr;
    gpgme_error_t err = gpgme_data_new_from_mem(&raw_in, ciphertext.data(), ciphertext.size(), 0);
    if (err != 0) engine_failure(err, doing);
    const DataPtr in(raw_in);

    PlainSink sink;
    sink.buffer.reserve(kMaxPlaintext);
    gpgme_data_cbs callbacks{};
    callbacks.write = sink_write;
    gpgme_data_t raw_out = nullptr;
    err = gpgme_data_new_from_cbs(&raw_out, &callbacks, &sink);
    if (err != 0) engine_failure(err, doing);
    DataPtr out(raw_out);

    err = gpgme_op_decrypt(ctx_, in.get(), out.get());
    out.reset();
    Secret text = Secret::adopt(sink.buffer);
    const gpgme_decrypt_result_t result = gpgme_op_decrypt_result(ctx_);

    std::string keyids;
    bool refused = false;
    std::vector<std::string> used;
    if (result != nullptr) {
        for (gpgme_recipient_t r = result->recipients; r != nullptr; r = r->next) {
            if (r->keyid == nullptr) continue;
            if (!keyids.empty()) keyids += ", ";
            keyids += r->keyid;
            if (is_passphrase_refusal(gpgme_err_code(r->status))) refused = true;
            if (r->status == 0) used.emplace_back(r->keyid);
        }
    }
    if (sink.overflow) {
        throw Error(ErrorCode::keyring_error, entry + " holds more than " +
                                                  std::to_string(kMaxPlaintext) +
                                                  " bytes: not a credentials object");
    }
    if (err != 0) {
        const gpgme_err_code_t code = gpgme_err_code(err);
        if (refused || is_passphrase_refusal(code))
            throw Error(ErrorCode::keyring_locked,
                        locked_message(entry, keyids.empty() ? "(unknown)" : keyids));
        if (code == GPG_ERR_NO_SECKEY || code == GPG_ERR_DECRYPT_FAILED) {
            throw Error(ErrorCode::keyring_error,
                        doing + ": it is encrypted to " +
                            (keyids.empty() ? std::string("no key gpg knows") : keyids) +
                            ", and no secret key for " + (keyids.empty() ? "it" : "them") +
                            " is in this gpg keyring (" + text_of(err) + ")");
        }
        if (code == GPG_ERR_NO_DATA)
            throw Error(ErrorCode::keyring_error, doing + ": not an OpenPGP message");
        engine_failure(err, doing);
    }

    return Decrypted{std::move(text), std::move(used)};
}

std::string GpgSession::encrypt(const Secret& plaintext, const std::vector<std::string>& recipients,
                                const std::string& entry) {
    std::string doing = "writing " + entry + " to the password store";
    std::string recipient_lines;
    for (const std::string& id : recipients) {
        // GPGME reads a line starting with "--" as a flag, not a recipient.
        if (id.rfind("--", 0) == 0 || id.find('\n') != std::string::npos)
            throw Error(ErrorCode::keyring_error,
                        doing.append(": the gpg id \"").append(id).append("\" is not valid"));
        recipient_lines += id;
        recipient_lines += '\n';
    }
    const std::string_view view = plaintext.view();
    gpgme_data_t raw_in = nullptr;
    gpgme_error_t err = gpgme_data_new_from_mem(&raw_in, view.data(), view.size(), 0);
    if (err != 0) engine_failure(err, doing);
    const DataPtr in(raw_in);
    gpgme_data_t raw_out = nullptr;
    err = gpgme_data_new(&raw_out);
    if (err != 0) engine_failure(err, doing);
    DataPtr out(raw_out);

    err = gpgme_op_encrypt_ext(ctx_, nullptr, recipient_lines.c_str(), GPGME_ENCRYPT_NO_ENCRYPT_TO,
                               in.get(), out.get());
    const gpgme_encrypt_result_t result = gpgme_op_encrypt_result(ctx_);
    std::string why;
    std::vector<std::string> unusable;  // ids whose key may say why
    if (result != nullptr && result->invalid_recipients != nullptr) {
        for (gpgme_invalid_key_t k = result->invalid_recipients; k != nullptr; k = k->next) {
            unusable.emplace_back(k->fpr != nullptr ? k->fpr : "?");
            if (!why.empty()) why += "; ";
            why += unusable.back() + ": " + text_of(k->reason);
        }
    } else if (err != 0) {
        const gpgme_err_code_t code = gpgme_err_code(err);
        if (code != GPG_ERR_UNUSABLE_PUBKEY && code != GPG_ERR_NO_PUBKEY &&
            code != GPG_ERR_AMBIGUOUS_NAME)
            engine_failure(err, doing);
        why = text_of(err);
        if (code == GPG_ERR_UNUSABLE_PUBKEY) unusable = recipients;
    }
    if (!why.empty()) {
        // After reading the result: a key listing frees it.
        std::string advice;
        for (const std::string& id : unusable) {
            if (const std::string fix = unusable_key_advice(ctx_, id); !fix.empty())
                advice += "; " + fix;
        }
        throw Error(ErrorCode::keyring_error,
                    doing + ": gpg cannot encrypt to the store's gpg ids (" + why + ")" +
                        (advice.empty() ? "; check the .gpg-id that applies and `gpg --list-keys`"
                                        : advice));
    }
    std::size_t length = 0;
    char* bytes = gpgme_data_release_and_get_mem(out.release(), &length);
    std::string ciphertext(bytes != nullptr ? bytes : "", length);
    gpgme_free(bytes);
    return ciphertext;
}

bool GpgSession::signed_by(const std::string& file, const std::string& signature,
                           const std::vector<std::string>& fingerprints) {
    gpgme_data_t raw_sig = nullptr;
    gpgme_data_t raw_text = nullptr;
    if (gpgme_data_new_from_mem(&raw_sig, signature.data(), signature.size(), 0) != 0) return false;
    const DataPtr sig(raw_sig);
    if (gpgme_data_new_from_mem(&raw_text, file.data(), file.size(), 0) != 0) return false;
    const DataPtr text(raw_text);
    if (gpgme_op_verify(ctx_, sig.get(), text.get(), nullptr) != 0) return false;
    const gpgme_verify_result_t result = gpgme_op_verify_result(ctx_);
    if (result == nullptr) return false;
    for (gpgme_signature_t s = result->signatures; s != nullptr; s = s->next) {
        // pass takes VALIDSIG's fingerprints: a good signature by a key that
        // is not expired or revoked (its validity in the web of trust aside).
        if (gpgme_err_code(s->status) != GPG_ERR_NO_ERROR || s->fpr == nullptr) continue;
        const std::string fpr = s->fpr;
        gpgme_key_t raw_key = nullptr;
        std::vector<std::string> signer{fpr};
        if (gpgme_get_key(ctx_, fpr.c_str(), &raw_key, 0) == 0) {
            const KeyPtr key(raw_key);
            if (key->fpr != nullptr) signer.emplace_back(key->fpr);
        }
        for (const std::string& wanted : fingerprints) {
            if (std::find(signer.begin(), signer.end(), wanted) != signer.end()) return true;
        }
    }
    return false;
}

std::vector<std::string> keygrips_of(const GpgOptions& options,
                                     const std::vector<std::string>& keyids) {
    std::vector<std::string> grips;
    if (keyids.empty()) return grips;
    GpgSession session(options);
    for (const std::string& keyid : keyids) {
        gpgme_key_t raw_key = nullptr;
        if (gpgme_get_key(session.context(), keyid.c_str(), &raw_key, 1) != 0) continue;
        const KeyPtr key(raw_key);
        for (gpgme_subkey_t sub = key->subkeys; sub != nullptr; sub = sub->next) {
            if (sub->keyid != nullptr && sub->keygrip != nullptr && keyid == sub->keyid)
                grips.emplace_back(sub->keygrip);
        }
    }
    return grips;
}

namespace {

struct KeyinfoAnswer {
    std::vector<std::string> needing;
};

gpgme_error_t keyinfo_status(void* opaque, const char* status, const char* args) {
    auto* answer = static_cast<KeyinfoAnswer*>(opaque);
    if (status == nullptr || args == nullptr || std::strcmp(status, "KEYINFO") != 0) return 0;
    // KEYGRIP TYPE SERIALNO IDSTR CACHED PROTECTION ...: CACHED is "1" when
    // the passphrase is cached; PROTECTION "P" when it needs one.
    const std::vector<std::string> fields = parse_store_key(args);  // words split on blanks
    if (fields.size() >= 6 && fields[5] == "P" && fields[4] != "1")
        answer->needing.push_back(fields[0]);
    return 0;
}

}  // namespace

std::vector<std::string> keys_needing_passphrase(const std::vector<std::string>& keygrips) {
    if (keygrips.empty()) return {};
    CtxPtr ctx = new_context();
    const char* socket = gpgme_get_dirinfo("agent-socket");
    gpgme_error_t err = gpgme_set_protocol(ctx.get(), GPGME_PROTOCOL_ASSUAN);
    if (err == 0)
        err = gpgme_ctx_set_engine_info(ctx.get(), GPGME_PROTOCOL_ASSUAN, socket, nullptr);
    if (err != 0) engine_failure(err, "asking gpg-agent about the store's keys");
    KeyinfoAnswer answer;
    for (const std::string& grip : keygrips) {
        const std::string command = "KEYINFO " + grip;
        gpgme_error_t op_err = 0;
        err = gpgme_op_assuan_transact_ext(ctx.get(), command.c_str(), nullptr, nullptr, nullptr,
                                           nullptr, keyinfo_status, &answer, &op_err);
        if (err != 0) {
            throw Error(ErrorCode::keyring_unavailable,
                        "gpg-agent cannot be reached (" + text_of(err) + ")");
        }
        if (op_err != 0) answer.needing.push_back(grip);  // unknown to the agent now
    }
    return answer.needing;
}

}  // namespace hostkeeper::daemon::pass
