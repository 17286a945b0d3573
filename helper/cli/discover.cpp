#include "helper/cli/discover.hpp"

#include <cstdio>
#include <vector>

#include "helper/cli/answer_source.hpp"
#include "helper/cli/command.hpp"
#include "helper/client/common_cli.hpp"
#include "helper/client/exit_codes.hpp"
#include "helper/client/printable_output.hpp"
#include "proto/error.hpp"
#include "proto/hostname.hpp"
#include "proto/messages.hpp"
#include "proto/services.hpp"

namespace hostkeeper::helper::cli {
namespace {
using proto::Json;

int print_all(const Json& response) {
    client::print_printable(stdout, "%s: %s\n", response.value("host", "?").c_str(),
                            source_text(response).c_str());
    client::print_printable(stdout, "document: %s\n", response.value("url", "?").c_str());
    if (response.contains("error"))
        client::print_printable(stdout, "refresh failed: %s\n",
                                response.value("error", "").c_str());
    const Json& services = response.at("services");
    if (services.empty()) client::print_printable(stdout, "no services\n");
    for (const auto& [id, value] : services.items()) {
        client::print_printable(
            stdout, "%-16s %s\n", id.c_str(),
            value.is_string() ? value.get<std::string>().c_str() : value.dump().c_str());
    }
    if (const auto invalid = response.find("invalid"); invalid != response.end()) {
        for (const auto& [id, why] : invalid->items()) {
            client::print_printable(stdout, "%-16s unusable: %s\n", id.c_str(),
                                    why.is_string() ? why.get<std::string>().c_str() : "?");
        }
    }
    return client::kExitOk;
}

int print_one(const Json& response, const std::string& service) {
    const Json& services = response.at("services");
    const std::string host = response.value("host", "?");
    if (const auto it = services.find(service); it != services.end()) {
        client::print_printable(
            stdout, "%s\n", it->is_string() ? it->get<std::string>().c_str() : it->dump().c_str());
        return client::kExitOk;
    }
    if (const auto invalid = response.find("invalid");
        invalid != response.end() && invalid->contains(service)) {
        client::print_printable(stderr, "hostkeeper: %s offers %s, but it cannot be used: %s\n",
                                host.c_str(), service.c_str(),
                                invalid->at(service).get<std::string>().c_str());
        return client::kExitNotFound;
    }
    const std::vector<std::string> others = proto::other_versions(services, service);
    if (others.empty()) {
        client::print_printable(stderr, "hostkeeper: %s does not provide %s\n", host.c_str(),
                                service.c_str());
    } else {
        std::string list;
        for (const std::string& other : others) list += (list.empty() ? "" : ", ") + other;
        client::print_printable(stderr, "hostkeeper: %s does not support %s; it offers %s\n",
                                host.c_str(), service.c_str(), list.c_str());
    }
    return client::kExitNotFound;
}

}  // namespace

int run_discover(const client::ClientOptions& client, const DiscoverOptions& options) {
    const std::string& service = options.service;
    if (!service.empty() && !proto::is_service_id(service)) {
        throw proto::Error(
            proto::ErrorCode::bad_request,
            "\"" + service + "\" is not a service id such as modules.v1 or login.v1");
    }
    Json request = proto::make_request(proto::Op::discover);
    request["host"] = proto::normalize_hostname(options.host);
    if (options.refresh) request["refresh"] = true;
    client::DaemonClient daemon(client);
    const Json response = daemon.call(request);
    if (options.json) {
        client::print_printable(stdout, "%s\n", response.dump(2).c_str());
        if (!service.empty() && !response.at("services").contains(service))
            return client::kExitNotFound;
        return client::kExitOk;
    }
    return service.empty() ? print_all(response) : print_one(response, service);
}

namespace {

class DiscoverCommand final : public Command {
  public:
    CLI::App* add_to(CLI::App& app) override {
        auto* cmd = app.add_subcommand(
            "discover",
            "a host's services (remote service discovery), from the daemon's cache when fresh");
        cmd->add_option("host", options_.host, "a registry hostname, e.g. app.terraform.io")
            ->required();
        cmd->add_option("service", options_.service,
                        "print only this service's URL, e.g. modules.v1");
        cmd->add_flag("--json", options_.json, "print the daemon's answer as JSON");
        cmd->add_flag("--refresh", options_.refresh, "skip the cache and fetch the document now");
        return cmd;
    }
    int run(const client::ClientOptions& client) override { return run_discover(client, options_); }

  private:
    DiscoverOptions options_;
};

}  // namespace

std::unique_ptr<Command> discover_command() {
    return std::make_unique<DiscoverCommand>();
}

}  // namespace hostkeeper::helper::cli
