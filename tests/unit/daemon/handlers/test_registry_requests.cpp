// The registry requests' replies: a cached versions list is answered with a
// prepared reply (its document's fields shared, not rebuilt) whose bytes are
// those of the reply built the slow way; a refreshed list gets new fields;
// constrained lists, packages, downloads and anything secret keep the
// ordinary path; a long list asked with "document_fd" goes by reference, in
// a sealed file that holds the same fields. The socket's writing of a
// prepared reply is in test_server.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_future.hpp>
#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <utility>

#include "daemon/handlers/replies.hpp"
#include "daemon/registry/mirror.hpp"
#include "dispatcher_fixture.hpp"
#include "proto/framing.hpp"
#include "proto/registry_address.hpp"
#include "proto/sealed_file.hpp"
#include "tests/support/long_versions.hpp"

namespace test_registry_requests {

using namespace hostkeeper;
namespace asio = boost::asio;
using daemon::registry::Mirror;
using daemon::registry::RegistryAnswer;
using daemon::server::Reply;
using proto::Json;
using test::FakeHttpClient;

namespace {

const std::string kDiscovery = "https://r.example/.well-known/terraform.json";
const std::string kModule = "r.example/acme/thing/aws";
const std::string kModuleVersions = "https://r.example/v1/modules/acme/thing/aws/versions";
const std::string kProvider = "r.example/acme/thing";
const std::string kProviderVersions = "https://r.example/v1/providers/acme/thing/versions";
const std::string kMirrorBase = "https://m.example:8443/p/";
const std::string kMirrorIndex = "https://m.example:8443/p/r.example/acme/thing/index.json";

std::string provider_versions_body(const std::string& newest) {
    return R"({"versions":[{"version":"1.0.0","protocols":["5.0"],)"
           R"("platforms":[{"os":"linux","arch":"amd64"}]},{"version":")" +
           newest +
           R"(","protocols":["5.0"],"platforms":[{"os":"linux","arch":"amd64"},)"
           R"({"os":"darwin","arch":"arm64"}]}],"warnings":["old"]})";
}

struct Fixture : test::DispatcherFixture {
    Fixture() {
        frozen = std::chrono::steady_clock::now();
        http.routes[kDiscovery] = [] {
            return FakeHttpClient::json(
                R"({"modules.v1":"/v1/modules/","providers.v1":"/v1/providers/"})");
        };
        http.routes[kModuleVersions] = [] {
            return FakeHttpClient::json(
                R"({"modules":[{"versions":[{"version":"1.0.0"},{"version":"1.1.0"}]}]})");
        };
        http.routes[kProviderVersions] = [this] {
            return FakeHttpClient::json(provider_versions_body(newest));
        };
        http.routes[kMirrorIndex] = [] {
            return FakeHttpClient::json(R"({"versions":{"1.0.0":{},"1.1.0":{}}})");
        };
    }

    template <typename T>
    T run(asio::awaitable<T> work) {
        return asio::co_spawn(io, std::move(work), asio::use_future).get();
    }
    // The daemon's reply to `request`, as the server would be handed it.
    Reply ask(const Json& request) {
        const std::string payload = request.dump();
        return run(dispatcher.handle(payload, {}));
    }
    RegistryAnswer module_versions() {
        return run(registry.module_versions(proto::parse_module_address(kModule), false));
    }
    RegistryAnswer provider_versions(std::optional<Mirror> mirror = std::nullopt) {
        return run(registry.provider_versions(proto::parse_provider_address(kProvider),
                                              std::move(mirror), false));
    }

    std::string newest = "1.2.0";  // the provider registry's newest version
};

Json request(proto::Op op, const char* key, const std::string& value) {
    Json r = proto::make_request(op);
    r[key] = value;
    return r;
}

// The payload a reply stands for.
std::string flat(const Reply& reply) {
    return reply.payload + (reply.shared ? *reply.shared : std::string()) + reply.tail;
}

}  // namespace

TEST_CASE("a cached versions list is a prepared reply with the bytes of the slow one",
          "[daemon][handlers][registry]") {
    Fixture f;
    const Json module = request(proto::Op::module_versions, "module", kModule);
    const Reply first = f.ask(module);  // from the network
    const Reply cached = f.ask(module);
    REQUIRE(cached.shared);
    CHECK(cached.shared == first.shared);  // one document, one set of fields
    CHECK(flat(cached) ==
          R"({"v":1,"ok":true,"module":"r.example/acme/thing/aws","source":"cache",)"
          R"("url":"https://r.example/v1/modules/acme/thing/aws/versions",)"
          R"("versions":[{"version":"1.1.0"},{"version":"1.0.0"}],"age_s":0,"expires_in_s":300})");
    CHECK(flat(cached) ==
          daemon::handlers::reply::registry(Json{{"module", kModule}}, f.module_versions()));

    const Json provider = request(proto::Op::provider_versions, "provider", kProvider);
    f.ask(provider);
    f.frozen = *f.frozen + std::chrono::seconds(42);  // an age other than 0, between requests
    const Reply provider_reply = f.ask(provider);
    REQUIRE(provider_reply.shared);
    const RegistryAnswer answer = f.provider_versions();
    CHECK(answer.age == std::chrono::seconds(42));
    CHECK(flat(provider_reply) ==
          daemon::handlers::reply::registry(Json{{"provider", kProvider}}, answer));
    CHECK(Json::parse(flat(provider_reply)).at("warnings") == Json::array({"old"}));

    // Through a mirror: the request's "mirror" is repeated before "source".
    Json mirrored = provider;
    mirrored["mirror"] = kMirrorBase;
    f.ask(mirrored);
    const Reply mirror_reply = f.ask(mirrored);
    REQUIRE(mirror_reply.shared);
    const RegistryAnswer mirror_answer =
        f.provider_versions(daemon::registry::make_mirror(kMirrorBase));
    CHECK(flat(mirror_reply) ==
          daemon::handlers::reply::registry(Json{{"provider", kProvider}, {"mirror", kMirrorBase}},
                                            mirror_answer));
    CHECK(mirror_reply.shared != provider_reply.shared);
}

TEST_CASE("a constrained versions list keeps the ordinary path, with the same bytes",
          "[daemon][handlers][registry]") {
    Fixture f;
    Json provider = request(proto::Op::provider_versions, "provider", kProvider);
    provider["constraint"] = "~> 1.1";
    f.ask(provider);
    const Reply constrained = f.ask(provider);
    CHECK_FALSE(constrained.shared);
    CHECK(constrained.tail.empty());

    const RegistryAnswer answer = f.provider_versions();
    Json body = answer.document->body;
    body["versions"] = Json::array({answer.document->body.at("versions").at(0)});
    const Json fields = {{"provider", kProvider}, {"constraint", "~> 1.1"}, {"total", 2}};
    CHECK(constrained.payload == daemon::handlers::reply::registry(fields, answer, &body));
    CHECK(Json::parse(constrained.payload).at("versions").at(0).at("version") == "1.2.0");
}

TEST_CASE("a refreshed versions list gets new prepared fields, and the old ones live while held",
          "[daemon][handlers][registry]") {
    Fixture f;
    const Json provider = request(proto::Op::provider_versions, "provider", kProvider);
    f.ask(provider);
    const Reply before = f.ask(provider);
    REQUIRE(before.shared);
    const std::string before_text = *before.shared;

    f.newest = "1.3.0";
    Json refresh = provider;
    refresh["refresh"] = true;
    const Reply refreshed = f.ask(refresh);
    REQUIRE(refreshed.shared);
    CHECK(refreshed.shared != before.shared);
    CHECK(Json::parse(flat(refreshed)).at("versions").at(0).at("version") == "1.3.0");
    const Reply after = f.ask(provider);
    CHECK(after.shared == refreshed.shared);
    CHECK(Json::parse(flat(after)).at("source") == "cache");
    CHECK(flat(after) ==
          daemon::handlers::reply::registry(Json{{"provider", kProvider}}, f.provider_versions()));

    // The replaced document is gone from the cache; a reply still holding
    // its fields keeps them whole.
    CHECK(*before.shared == before_text);
    CHECK(before.shared.use_count() == 1);
}

TEST_CASE("secrets, downloads and packages are never prepared replies",
          "[daemon][handlers][registry]") {
    Fixture f;
    f.keyring.put("r.example", R"({"token":"secret-token"})");
    const Reply credentials = f.ask(request(proto::Op::get, "host", "r.example"));
    CHECK_FALSE(credentials.shared);
    CHECK(credentials.tail.empty());
    CHECK(credentials.payload.find("secret-token") != std::string::npos);

    // A module's download location may carry credentials of its own.
    f.http.routes["https://r.example/v1/modules/acme/thing/aws/1.0.0/download"] = [] {
        daemon::http::HttpResponse r;
        r.status = 204;
        r.terraform_get = "git::https://user:pass@git.example/thing.git";
        return r;
    };
    Json download = request(proto::Op::module_download, "module", kModule);
    download["version"] = "1.0.0";
    f.ask(download);
    const Reply location = f.ask(download);
    CHECK_FALSE(location.shared);
    CHECK(Json::parse(location.payload).at("source") == "cache");

    const Reply failed = f.ask(request(proto::Op::module_versions, "module", "r.example/a/b/c"));
    CHECK_FALSE(failed.shared);
    CHECK(Json::parse(failed.payload).at("ok") == false);
}

namespace {

// The payload a reply passed by reference stands for: the frame with the
// passed file's members in place of "document_fd", which ends the frame's
// first part.
std::string made_whole(const Reply& reply) {
    REQUIRE(reply.file);
    const std::string named =
        R"("document_fd":{"bytes":)" + std::to_string(reply.file->size()) + "}";
    REQUIRE(reply.payload.size() > named.size());
    CHECK(reply.payload.substr(reply.payload.size() - named.size()) == named);
    const std::string document =
        proto::read_passed_file(reply.file->fd(), reply.file->size(), proto::kMaxResponseFrameSize);
    REQUIRE(document.size() > 2);
    CHECK(document.front() == '{');
    CHECK(document.back() == '}');
    return reply.payload.substr(0, reply.payload.size() - named.size()) +
           document.substr(1, document.size() - 2) + reply.tail;
}

}  // namespace

TEST_CASE("a long cached versions list asked with document_fd goes by reference, the same list",
          "[daemon][handlers][registry]") {
    Fixture f;
    f.http.routes[kProviderVersions] = [] {
        return FakeHttpClient::json(hostkeeper::test::long_provider_versions_document());
    };
    const Json inline_request = request(proto::Op::provider_versions, "provider", kProvider);
    Json passed_request = inline_request;
    passed_request["document_fd"] = true;
    f.ask(inline_request);  // from the network
    const Reply inline_reply = f.ask(inline_request);
    const Reply passed = f.ask(passed_request);
    REQUIRE(inline_reply.shared);
    CHECK_FALSE(inline_reply.file);
    REQUIRE(passed.file);
    CHECK_FALSE(passed.shared);
    CHECK(passed.size() < 200);  // the frame: the request's fields, the source, age, expiry
    CHECK(made_whole(passed) == flat(inline_reply));   // byte for byte
    CHECK(f.ask(passed_request).file == passed.file);  // one file per document

    // A refreshed list is a new document with a new file; a reply still
    // holding the old one reads it whole.
    const std::string old_text = proto::read_passed_file(passed.file->fd(), passed.file->size(),
                                                         proto::kMaxResponseFrameSize);
    Json refresh = passed_request;
    refresh["refresh"] = true;
    const Reply refreshed = f.ask(refresh);
    REQUIRE(refreshed.file);
    CHECK(refreshed.file != passed.file);
    CHECK(proto::read_passed_file(passed.file->fd(), passed.file->size(),
                                  proto::kMaxResponseFrameSize) == old_text);
}

TEST_CASE("a short versions list, a constrained one or another answer is never passed",
          "[daemon][handlers][registry]") {
    Fixture f;
    Json provider = request(proto::Op::provider_versions, "provider", kProvider);
    provider["document_fd"] = true;
    f.ask(provider);
    const Reply short_list = f.ask(provider);  // a few hundred bytes: inline is cheaper
    CHECK_FALSE(short_list.file);
    CHECK(short_list.shared);
    CHECK_FALSE(Json::parse(flat(short_list)).contains("document_fd"));

    f.http.routes[kProviderVersions] = [] {
        return FakeHttpClient::json(hostkeeper::test::long_provider_versions_document());
    };
    Json refresh = provider;
    refresh["refresh"] = true;
    refresh["constraint"] = ">= 3.0.0";
    const Reply constrained = f.ask(refresh);
    CHECK_FALSE(constrained.file);
    CHECK(Json::parse(constrained.payload).at("versions").size() == 300);

    Json download = request(proto::Op::module_download, "module", kModule);
    download["version"] = "1.0.0";
    download["document_fd"] = true;
    CHECK_FALSE(f.ask(download).file);

    Json bad = provider;
    bad["document_fd"] = "yes";
    const Json refused = Json::parse(f.ask(bad).payload);
    CHECK(refused.at("error").at("code") == "bad_request");
    CHECK(refused.at("error").at("message") == "\"document_fd\" must be true or false");
}

}  // namespace test_registry_requests
