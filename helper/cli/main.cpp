// hostkeeper: the command line for people and scripts.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "helper/cli/check.hpp"
#include "helper/cli/discover.hpp"
#include "helper/cli/doctor.hpp"
#include "helper/cli/import.hpp"
#include "helper/cli/keyring_cli.hpp"
#include "helper/cli/list.hpp"
#include "helper/cli/registry_cache_doctor.hpp"
#include "helper/cli/registry_cli.hpp"
#include "helper/cli/setup.hpp"
#include "helper/cli/token_commands.hpp"
#include "helper/client/common_cli.hpp"
#include "helper/client/daemon_client.hpp"
#include "helper/client/exit_codes.hpp"
#include "helper/client/launcher.hpp"
#include "proto/error.hpp"
#include "proto/hostname.hpp"
#include "proto/messages.hpp"
#include "proto/version.hpp"

namespace {
using namespace hostkeeper;
using namespace hostkeeper::helper;
using proto::Json;

int status(const helper::client::ClientOptions& options, bool json) {
    helper::client::DaemonClient daemon(options);
    const Json response = daemon.call(proto::make_request(proto::Op::status));
    if (json) {
        std::printf("%s\n", response.dump(2).c_str());
        return helper::client::kExitOk;
    }
    const Json& d = response.at("daemon");
    const Json& c = response.at("credentials");
    std::printf("hostkeeperd %s (protocol %d), pid %lld, up %s%s\n",
                d.value("version", "?").c_str(), d.value("protocol", 0), d.value("pid", 0LL),
                helper::client::duration_text(d.value("uptime_s", 0LL)).c_str(),
                d.value("on_demand", false) ? ", started on demand" : "");
    std::printf("socket: %s\n", daemon.location().socket.c_str());
    std::printf(
        "credentials cache: %lld entries (%lld with credentials, %lld without), %lld hits, %lld "
        "misses, "
        "%lld keyring lookups\n",
        c.value("entries", 0LL), c.value("positive", 0LL), c.value("negative", 0LL),
        c.value("hits", 0LL), c.value("misses", 0LL), c.value("keyring_lookups", 0LL));
    if (const auto rejected = c.find("rejected"); rejected != c.end() && rejected->is_array()) {
        for (const Json& r : *rejected) {
            if (!r.is_object()) continue;
            const std::string host = r.value("host", "?");
            std::printf("token refused: %s (HTTP %lld from %s, %s ago): run terraform login %s\n",
                        host.c_str(), r.value("status", 0LL), r.value("url", "?").c_str(),
                        helper::client::duration_text(r.value("age_s", 0LL)).c_str(), host.c_str());
        }
    }
    if (const auto keyring = response.find("keyring");
        keyring != response.end() && keyring->is_object()) {
        for (const auto& line : helper::cli::keyring_status_lines(*keyring))
            std::printf("%s\n", line.c_str());
    }
    if (c.contains("keyring_watched")) {
        if (c.value("keyring_watched", false)) {
            std::printf(
                "keyring watch: on (%lld invalidations after a lock, an edit or a restart)\n",
                c.value("invalidations", 0LL));
        } else {
            std::printf(
                "keyring watch: OFF, the Secret Service cannot be watched; credentials are not "
                "cached\n");
        }
    }
    if (const auto disc = response.find("discovery"); disc != response.end()) {
        std::printf(
            "discovery cache: %lld entries (%lld with services, %lld without, %lld failures), %lld "
            "hits, "
            "%lld misses, %lld stale answers, %lld forced, %lld upstream requests (%lld failed)\n",
            disc->value("entries", 0LL), disc->value("positive", 0LL), disc->value("empty", 0LL),
            disc->value("errors", 0LL), disc->value("hits", 0LL), disc->value("misses", 0LL),
            disc->value("stale", 0LL), disc->value("forced", 0LL),
            disc->value("upstream_requests", 0LL), disc->value("upstream_failures", 0LL));
    }
    if (const auto reg = response.find("registry"); reg != response.end()) {
        std::printf(
            "registry cache: %lld entries (%lld documents, %lld not found, %lld failures), "
            "%lld hits, %lld misses, %lld stale answers, %lld upstream requests "
            "(%lld failed), %lld in flight, %lld evictions\n",
            reg->value("entries", 0LL), reg->value("documents", 0LL), reg->value("not_found", 0LL),
            reg->value("errors", 0LL), reg->value("hits", 0LL), reg->value("misses", 0LL),
            reg->value("stale", 0LL), reg->value("upstream_requests", 0LL),
            reg->value("upstream_failures", 0LL), reg->value("in_flight", 0LL),
            reg->value("evictions", 0LL));
    }
    if (const auto cache = response.find("registry_cache");
        cache != response.end() && cache->is_object()) {
        std::printf("%s\n", helper::cli::registry_cache_status_line(*cache).c_str());
    }
    return helper::client::kExitOk;
}

int flush(const helper::client::ClientOptions& options, const std::string& host) {
    Json request = proto::make_request(proto::Op::flush);
    if (!host.empty()) request["host"] = proto::normalize_hostname(host);
    helper::client::DaemonClient daemon(options);
    const Json response = daemon.call(request);
    std::printf("flushed %lld cached entr%s\n", response.value("flushed", 0LL),
                response.value("flushed", 0LL) == 1 ? "y" : "ies");
    return helper::client::kExitOk;
}

helper::client::ClientOptions with_start(helper::client::ClientOptions options) {
    options.start_daemon = true;
    return options;
}

int start(helper::client::ClientOptions options) {
    options.start_daemon = true;
    helper::client::DaemonClient daemon(options);
    const Json response = daemon.call(proto::make_request(proto::Op::hello));
    std::printf("hostkeeperd %s is running at %s\n", response.value("daemon_version", "?").c_str(),
                daemon.location().socket.c_str());
    return helper::client::kExitOk;
}

int stop(const helper::client::ClientOptions& options) {
    // Returns once that process has exited, so that scripts can rely on it.
    if (!helper::client::DaemonClient(options).stop()) {
        std::printf("hostkeeperd is not running\n");
        return helper::client::kExitOk;
    }
    std::printf("hostkeeperd stopped\n");
    return helper::client::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string program = "hostkeeper";
    CLI::App app{
        "hostkeeper: Terraform and OpenTofu credentials in the OS keyring, served by hostkeeperd.",
        program};
    app.require_subcommand(1);
    helper::client::CommonOptions common;
    common.add_to(app, "give up after this many seconds");
    app.set_version_flag("--version", program + " " + proto::product_version());
    app.footer(
        "Exit codes: 0 ok, 1 the daemon, keyring, discovery or registry failed, 2 bad arguments, 3 "
        "the host "
        "lacks the service or the registry lacks the module, provider, version or package, or "
        "no credentials are stored for the host, 4 no daemon, 5 timed out, 6 the daemon stayed "
        "busy, 7 check: a host rejected its token; exec: COMMAND's own status, 126/127 when it "
        "cannot be run.");

    bool json = false;
    auto* status_cmd = app.add_subcommand("status",
                                          "show the running daemon: pid, version, uptime, the "
                                          "keyring backend and why, "
                                          "credentials/discovery/registry cache counters");
    status_cmd->add_flag("--json", json, "print the daemon's answer as JSON");
    std::string host;
    auto* flush_cmd =
        app.add_subcommand("flush", "drop cached entries: all of them, or those of HOST");
    flush_cmd->add_option("host", host, "a registry hostname");
    auto* start_cmd = app.add_subcommand(
        "start", "start the daemon unless it is running (the helper also starts it on demand)");
    auto* stop_cmd = app.add_subcommand("stop", "stop the daemon and wait until it has exited");
    std::string discover_host, service;
    bool refresh = false;
    auto* discover_cmd = app.add_subcommand(
        "discover",
        "a host's services (remote service discovery), from the daemon's cache when fresh");
    discover_cmd->add_option("host", discover_host, "a registry hostname, e.g. app.terraform.io")
        ->required();
    discover_cmd->add_option("service", service, "print only this service's URL, e.g. modules.v1");
    discover_cmd->add_flag("--json", json, "print the daemon's answer as JSON");
    discover_cmd->add_flag("--refresh", refresh, "skip the cache and fetch the document now");
    helper::cli::RegistryQuery query;
    std::string mirror;
    bool direct = false;
    const auto query_flags = [&](CLI::App* cmd) {
        cmd->add_flag("--json", query.json, "print the daemon's answer as JSON");
        cmd->add_flag("--refresh", query.refresh, "skip the cache and fetch the document now");
    };
    const auto mirror_flags = [&](CLI::App* cmd) {
        auto* m =
            cmd->add_option("--mirror", mirror,
                            "ask this provider network mirror (https URL) instead of the registry");
        cmd->add_flag("--direct", direct,
                      "ask the provider's registry even if the daemon has a mirror_url")
            ->excludes(m);
    };
    auto* module_cmd = app.add_subcommand(
        "module", "a module registry's versions and download locations (modules.v1)");
    module_cmd->require_subcommand(1);
    auto* module_versions_cmd =
        module_cmd->add_subcommand("versions", "the versions of a module, newest first");
    module_versions_cmd
        ->add_option("address", query.address,
                     "[HOSTNAME/]NAMESPACE/NAME/SYSTEM, e.g. hashicorp/consul/aws")
        ->required();
    module_versions_cmd->add_option("--constraint", query.constraint,
                                    "only versions matching, e.g. \"~> 1.2, != 1.2.5\"");
    query_flags(module_versions_cmd);
    auto* module_download_cmd = module_cmd->add_subcommand(
        "download", "where a module version is downloaded from (X-Terraform-Get)");
    module_download_cmd->add_option("address", query.address, "[HOSTNAME/]NAMESPACE/NAME/SYSTEM")
        ->required();
    module_download_cmd->add_option("version", query.version, "the version, e.g. 1.2.0")
        ->required();
    query_flags(module_download_cmd);
    auto* provider_cmd = app.add_subcommand(
        "provider", "a provider registry's or network mirror's versions and packages");
    provider_cmd->require_subcommand(1);
    auto* provider_versions_cmd = provider_cmd->add_subcommand(
        "versions", "the versions of a provider, newest first, with protocols and platforms");
    provider_versions_cmd
        ->add_option("address", query.address, "[HOSTNAME/]NAMESPACE/TYPE, e.g. hashicorp/random")
        ->required();
    provider_versions_cmd->add_option("--constraint", query.constraint,
                                      "only versions matching, e.g. \">= 2.0, < 4.0\"");
    query_flags(provider_versions_cmd);
    mirror_flags(provider_versions_cmd);
    auto* provider_package_cmd = provider_cmd->add_subcommand(
        "package",
        "the package of a provider version for a platform: URL, filename, hashes, signing keys");
    provider_package_cmd->add_option("address", query.address, "[HOSTNAME/]NAMESPACE/TYPE")
        ->required();
    provider_package_cmd->add_option("version", query.version, "the version, e.g. 3.6.0")
        ->required();
    provider_package_cmd->add_option(
        "--platform", query.platform,
        "OS_ARCH (default: this machine's, " + helper::cli::this_platform() + ")");
    query_flags(provider_package_cmd);
    mirror_flags(provider_package_cmd);
    auto* provider_fetch_cmd =
        provider_cmd->add_subcommand("fetch",
                                     "download a provider package and check it against the zh:/h1: "
                                     "hashes its registry or mirror published");
    provider_fetch_cmd->add_option("address", query.address, "[HOSTNAME/]NAMESPACE/TYPE")
        ->required();
    provider_fetch_cmd->add_option("version", query.version, "the version, e.g. 3.6.0")->required();
    provider_fetch_cmd->add_option(
        "--platform", query.platform,
        "OS_ARCH (default: this machine's, " + helper::cli::this_platform() + ")");
    provider_fetch_cmd->add_option("-o,--output", query.output_dir,
                                   "write the archive into this directory (default: .)");
    provider_fetch_cmd->add_flag("--json", query.json, "print the daemon's answer as JSON");
    provider_fetch_cmd->add_flag("--refresh", query.refresh,
                                 "skip the cache for the package's metadata");
    mirror_flags(provider_fetch_cmd);
    helper::cli::SetupOptions setup;
    auto* setup_cmd = app.add_subcommand(
        "setup",
        "make Terraform and OpenTofu use the helper: link it, add the credentials_helper block, "
        "enable the socket unit");
    setup_cmd->add_flag("--terraform", setup.terraform,
                        "set up Terraform (default: each tool that is found)");
    setup_cmd->add_flag("--opentofu", setup.opentofu,
                        "set up OpenTofu (default: each tool that is found)");
    setup_cmd->add_flag("--dry-run", setup.dry_run, "only print what would change");
    setup_cmd->add_flag("--undo", setup.undo,
                        "reverse what setup changed (recorded in $XDG_STATE_HOME/hostkeeper); "
                        "with --registry-cache, only the registry cache");
    setup_cmd->add_flag("--restore-tokens", setup.restore_tokens,
                        "with --undo: first write every stored token into Terraform's "
                        "credentials.tfrc.json (plaintext), so Terraform works without the helper");
    setup_cmd->add_flag("--registry-cache", setup.registry_cache,
                        "also route Terraform's and OpenTofu's registry requests through "
                        "hostkeeperd's cache (a loopback listener and host blocks)");
    setup_cmd->add_option("hosts", setup.registry_hosts,
                          "with --registry-cache: registry hosts to route now (others are "
                          "learned as Terraform asks the helper about them)");
    helper::cli::ImportOptions import;
    auto* import_cmd = app.add_subcommand(
        "import",
        "move tokens from credentials.tfrc.json into the keyring, verified, then out of the file");
    import_cmd->add_flag("--keep-file", import.keep_file,
                         "store and verify, but leave the file as it is");
    auto* doctor_cmd = app.add_subcommand(
        "doctor",
        "check that Terraform and OpenTofu will use the keyring; say how to fix what fails");
    auto* unlock_cmd = app.add_subcommand(
        "unlock",
        "unlock the keyring: the Secret Service's default collection, or pass's gpg key "
        "(gpg-agent asks for the passphrase in this terminal and caches it)");
    std::string migrate_to;
    auto* migrate_cmd = app.add_subcommand(
        "migrate",
        "move every token to the other keyring backend (each read back before it is removed), "
        "then keep using that backend");
    migrate_cmd->add_option("--to", migrate_to, "the backend to move to")
        ->required()
        ->check(CLI::IsMember({"pass", "secret-service"}));
    migrate_cmd->footer(
        "Exit status 0 when every host moved and the daemon switched (config.toml then says "
        "backend = \"TO\" under [keyring]); 1 when a host failed (it stays where it was) or "
        "the daemon refused.");
    auto* list_cmd = app.add_subcommand(
        "list",
        "every host with stored credentials (read from the keyring): Unicode and ASCII form, "
        "backend, label, when stored, field names (never values), locked, and what shadows it");
    list_cmd->add_flag("--json", json, "print a JSON document (hosts, docker, rejected, warnings)");
    std::vector<std::string> check_hosts;
    auto* check_cmd = app.add_subcommand(
        "check",
        "is each stored token still good? ask each host (or those named) with its token: "
        "valid, rejected, accepted, no credentials or failed");
    check_cmd->add_option("hosts", check_hosts, "registry hostnames (default: every stored host)");
    check_cmd->add_flag("--json", json, "print the daemon's answers as JSON");
    check_cmd->footer(
        "Exit status: 0 no host rejected its token and none failed; 7 a host rejected its "
        "token (expired or revoked); 1 a host could not be checked, or the daemon failed.");
    helper::cli::ExecOptions exec;
    auto* exec_cmd = helper::cli::add_exec_command(app, exec);
    helper::cli::TokenOptions token;
    auto* token_cmd = helper::cli::add_token_command(app, token);
    if (const auto code = helper::client::parse_or_exit(app, argc, argv)) return *code;

    helper::client::ClientOptions options = common.client_options();
    options.start_daemon =
        false;  // reporting on a daemon must not start one (import and doctor do)
    return helper::client::run_reporting(program, [&] {
        if (status_cmd->parsed()) return status(options, json);
        if (flush_cmd->parsed()) return flush(options, host);
        if (stop_cmd->parsed()) return stop(options);
        if (start_cmd->parsed()) return start(options);
        if (discover_cmd->parsed()) {
            return helper::cli::run_discover(with_start(options),
                                             {discover_host, service, json, refresh});
        }
        if (direct) query.mirror = "";
        if (!mirror.empty()) query.mirror = mirror;
        if (module_versions_cmd->parsed())
            return helper::cli::run_module_versions(with_start(options), query);
        if (module_download_cmd->parsed())
            return helper::cli::run_module_download(with_start(options), query);
        if (provider_versions_cmd->parsed())
            return helper::cli::run_provider_versions(with_start(options), query);
        if (provider_package_cmd->parsed())
            return helper::cli::run_provider_package(with_start(options), query);
        if (provider_fetch_cmd->parsed()) {
            // A download takes longer than a question: longer than the daemon's
            // default fetch_timeout (10 min) plus discovery, unless --timeout says.
            helper::client::ClientOptions fetching = with_start(options);
            if (app.get_option("--timeout")->count() == 0)
                fetching.timeout = std::chrono::minutes(15);
            return helper::cli::run_provider_fetch(fetching, query);
        }
        if (setup_cmd->parsed()) {
            if (!setup.registry_hosts.empty() && (!setup.registry_cache || setup.undo)) {
                std::fprintf(stderr,
                             "hostkeeper setup: HOST arguments go with --registry-cache, without "
                             "--undo\n");
                return helper::client::kExitUsage;
            }
            return helper::cli::run_setup(setup, with_start(options));
        }
        if (import_cmd->parsed()) return helper::cli::run_import(with_start(options), import);
        if (doctor_cmd->parsed()) return helper::cli::run_doctor(options);
        if (list_cmd->parsed()) return helper::cli::run_list(with_start(options), json);
        if (check_cmd->parsed())
            return helper::cli::run_check(with_start(options), check_hosts, json);
        if (exec_cmd->parsed()) return helper::cli::run_exec(with_start(options), exec);
        if (token_cmd->parsed()) return helper::cli::run_token(with_start(options), token);
        if (unlock_cmd->parsed()) {
            // The user types a passphrase meanwhile: no deadline unless --timeout says.
            helper::client::ClientOptions unlocking = with_start(options);
            if (app.get_option("--timeout")->count() == 0)
                unlocking.timeout = std::chrono::hours(1);
            return helper::cli::run_unlock(unlocking);
        }
        if (migrate_cmd->parsed()) {
            // Every host is written, read back and removed, perhaps after an unlock prompt.
            helper::client::ClientOptions migrating = with_start(options);
            if (app.get_option("--timeout")->count() == 0)
                migrating.timeout = std::chrono::minutes(10);
            return helper::cli::run_migrate(migrating, migrate_to);
        }
        return helper::client::kExitUsage;
    });
}
