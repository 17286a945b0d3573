// hk_bench_socket_load: load generator for hostkeeperd's socket.
//
// Load mode (default): N client threads, each with one persistent connection,
// send `get` requests for the given host(s) back to back for a fixed time
// (--seconds) or a fixed count (--requests), and one JSON line reports the
// total requests per second and the per-request latency percentiles:
//
//   hk_bench_socket_load --socket PATH --clients 8 --seconds 5 --host example.com
//
// With --op discover, load mode sends `{"v":1,"op":"discover","host":H}`
// instead of `get`, and the report counts the answers by their `source`
// (network, cache, other). Every client sends its first request at the same
// moment (they all connect first), so a burst of cold lookups is
//
//   hk_bench_socket_load --socket PATH --op discover --clients 200 --requests 200
//       --host h1.localhost:8443 ... --host h20.localhost:8443    (one command line)
//
// (client i asks for host i mod 20 once: 10 concurrent lookups per host).
//
// With --request JSON (repeatable, instead of --host and --op), load mode
// sends those requests as given ("v":1 added when absent), round robin like
// the hosts: any op, e.g. the registry requests,
//
//   hk_bench_socket_load --socket PATH --clients 8 --seconds 5
//       --request '{"op":"module_versions","module":"registry.localhost:8443/acme/net/aws"}'
//
// An answer counts as found when it is ok, as not found when it is the
// error not_found, and by its `source` when it has one (as for discover).
//
// Warm mode: one request per host <prefix><i>.example.com for i in
// [start, start+K), to fill the daemon's cache: `get` (caches what the keyring
// holds, or "no credentials") or, with --store, `store` of a token (written to
// the keyring, then cached). --max-seconds stops claiming new hosts after that
// long; the hosts done are always exactly [start, start+hosts_done).
//
//   hk_bench_socket_load --socket PATH --warm-hosts 10000 --prefix bench- [--store]
//
// With --receive-fds, each reply is read with recvmsg and a file descriptor
// passed with it (SCM_RIGHTS) is read whole with pread and closed: the client of a server that
// passes a prepared document by reference (hk_bench_floor_server SOCKET BYTES memfd).
//
// Exit status: 0 when every request got an ok response (and, in load mode,
// every `get` found credentials, every `discover` answer listed services,
// no --request answer was not_found, unless --allow-missing), 1 otherwise,
// 2 usage.

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "proto/framing.hpp"
#include "proto/messages.hpp"
#include "proto/version.hpp"

namespace {
namespace proto = hostkeeper::proto;
using proto::Json;
using Clock = std::chrono::steady_clock;

class Client {
  public:
    explicit Client(const std::string& path, bool receive_fds = false) : receive_fds_(receive_fds) {
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        if (path.size() >= sizeof address.sun_path)
            throw std::runtime_error("socket path too long: " + path);
        std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
        fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
        if (::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
            const std::string reason = std::strerror(errno);
            ::close(fd_);
            throw std::runtime_error("connect " + path + ": " + reason);
        }
        // As the product's clients wait (helper/client/connection): a
        // non-blocking socket, and poll for the direction awaited. A reader
        // asleep in poll(POLLIN) is not woken when the daemon takes its
        // request and frees its send buffer; one asleep in recv is.
        ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
    }
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;
    ~Client() {
        if (fd_ >= 0) ::close(fd_);
    }

    // Sends one whole frame and returns the response payload.
    const std::string& round_trip(const std::string& frame) {
        write_all(frame);
        proto::FrameHeader header{};
        const int passed = receive_fds_ ? read_header_and_fd(header) : -1;
        if (!receive_fds_) read_exact(reinterpret_cast<char*>(header.data()), header.size());
        const std::size_t size = proto::decode_header(header);
        response_.resize(size);
        read_exact(response_.data(), size);
        if (passed >= 0) append_file(passed);
        return response_;
    }

  private:
    // Waits for `events` on the socket. Never hang: the daemon answers cached
    // requests in microseconds and keyring writes in well under 30 s.
    void wait_for(short events) const {
        pollfd ready{fd_, events, 0};
        int n = 0;
        while ((n = ::poll(&ready, 1, 30'000)) < 0 && errno == EINTR) {
        }
        if (n == 0) throw std::runtime_error("hostkeeperd did not answer within 30 s");
        if (n < 0) throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
    }
    void write_all(const std::string& bytes) {
        std::size_t done = 0;
        while (done < bytes.size()) {
            const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && errno == EAGAIN) {
                wait_for(POLLOUT);
                continue;
            }
            if (n <= 0) throw std::runtime_error(std::string("send: ") + std::strerror(errno));
            done += static_cast<std::size_t>(n);
        }
    }
    void read_exact(char* data, std::size_t size) {
        std::size_t done = 0;
        while (done < size) {
            const ssize_t n = ::recv(fd_, data + done, size - done, 0);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && errno == EAGAIN) {
                wait_for(POLLIN);
                continue;
            }
            if (n == 0) throw std::runtime_error("hostkeeperd closed the connection");
            if (n < 0) throw std::runtime_error(std::string("recv: ") + std::strerror(errno));
            done += static_cast<std::size_t>(n);
        }
    }

    // The frame header with recvmsg, and the descriptor passed with its
    // first byte, if any (-1).
    int read_header_and_fd(proto::FrameHeader& header) {
        int passed = -1;
        std::size_t done = 0;
        while (done < header.size()) {
            iovec part{header.data() + done, header.size() - done};
            alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
            msghdr message{};
            message.msg_iov = &part;
            message.msg_iovlen = 1;
            message.msg_control = control;
            message.msg_controllen = sizeof control;
            const ssize_t n = ::recvmsg(fd_, &message, MSG_CMSG_CLOEXEC);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && errno == EAGAIN) {
                wait_for(POLLIN);
                continue;
            }
            if (n == 0) throw std::runtime_error("hostkeeperd closed the connection");
            if (n < 0) throw std::runtime_error(std::string("recvmsg: ") + std::strerror(errno));
            for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c)) {
                if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
                int fd = -1;
                std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
                if (passed >= 0) ::close(passed);
                passed = fd;
            }
            done += static_cast<std::size_t>(n);
        }
        return passed;
    }
    // Reads the whole of a passed file (kept beside the reply, which names
    // its size); closes it.
    void append_file(int file) {
        struct stat status {};
        if (::fstat(file, &status) != 0 || status.st_size < 0) {
            ::close(file);
            throw std::runtime_error("fstat of a passed descriptor failed");
        }
        const auto length = static_cast<std::size_t>(status.st_size);
        document_.resize(length);
        std::size_t done = 0;
        while (done < length) {
            const ssize_t n =
                ::pread(file, document_.data() + done, length - done, static_cast<off_t>(done));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            done += static_cast<std::size_t>(n);
        }
        ::close(file);
        if (done != length) throw std::runtime_error("a passed descriptor was cut short");
    }

    bool receive_fds_ = false;
    int fd_ = -1;
    std::string response_;
    std::string document_;  // --receive-fds: the last passed file's bytes
};

std::string get_frame(const std::string& host) {
    Json request = proto::make_request(proto::Op::get);
    request["host"] = host;
    return proto::encode_frame(proto::serialize(request));
}

std::string discover_frame(const std::string& host) {
    Json request = proto::make_request(proto::Op::discover);
    request["host"] = host;
    return proto::encode_frame(proto::serialize(request));
}

std::string store_frame(const std::string& host, std::size_t index, std::size_t token_length) {
    // Shaped like a Terraform Cloud API token: an id, ".atlasv1.", filler.
    std::string token = "bench" + std::to_string(index) + ".atlasv1.";
    if (token.size() < token_length) token.append(token_length - token.size(), 'x');
    Json request = proto::make_request(proto::Op::store);
    request["host"] = host;
    request["credentials"] = {{"token", token}};
    return proto::encode_frame(proto::serialize(request));
}

// --request: a JSON object with a string "op"; "v":1 first when absent.
std::string request_frame(const std::string& text) {
    const Json given = proto::parse_payload(text);
    const auto op = given.find("op");
    if (op == given.end() || !op->is_string())
        throw std::invalid_argument("--request needs a string \"op\": " + text);
    Json request = Json::object();
    if (!given.contains("v")) request["v"] = proto::kProtocolVersion;
    for (const auto& [key, value] : given.items()) request[key] = value;
    return proto::encode_frame(proto::serialize(request));
}

bool contains(const std::string& haystack, std::string_view needle) {
    return haystack.find(needle) != std::string::npos;
}

// What load mode sends: `get`, `discover`, or the --request messages.
enum class Kind { get, discover, request };

// The first response of each connection is parsed in full and checked; the
// rest by their fixed prefix, so that the client spends its CPU (shared with
// the daemon on a small machine) on sending requests rather than on JSON.
enum class Outcome { found, not_found, error };
Outcome classify(const std::string& response, bool full, Kind kind) {
    if (kind == Kind::request) {
        // found: ok; not_found: the error not_found (no such module, provider, ...).
        if (full) {
            const Json parsed = proto::parse_payload(response);
            if (parsed.value("ok", false) == true) return Outcome::found;
            const auto error = parsed.find("error");
            if (error != parsed.end() && error->is_object() &&
                error->value("code", "") == "not_found") {
                return Outcome::not_found;
            }
            return Outcome::error;
        }
        if (contains(response, R"("ok":true)")) return Outcome::found;
        if (contains(response, R"("code":"not_found")")) return Outcome::not_found;
        return Outcome::error;
    }
    if (kind == Kind::discover) {
        // found: a document with services; not_found: none (404, or nothing usable).
        if (full) {
            const Json parsed = proto::parse_payload(response);
            if (parsed.value("ok", false) != true) return Outcome::error;
            const auto services = parsed.find("services");
            if (services == parsed.end() || !services->is_object()) return Outcome::error;
            return services->empty() ? Outcome::not_found : Outcome::found;
        }
        if (!contains(response, R"("ok":true)")) return Outcome::error;
        if (contains(response, R"("services":{})")) return Outcome::not_found;
        return Outcome::found;
    }
    if (full) {
        const Json parsed = proto::parse_payload(response);
        if (parsed.value("ok", false) != true) return Outcome::error;
        if (!parsed.contains("found")) return Outcome::found;  // store: {"ok":true}
        return parsed.value("found", false) ? Outcome::found : Outcome::not_found;
    }
    if (!contains(response, R"("ok":true)")) return Outcome::error;
    if (contains(response, R"("found":false)")) return Outcome::not_found;
    return Outcome::found;
}

struct ThreadResult {
    std::uint64_t requests = 0;
    std::uint64_t found = 0;
    std::uint64_t not_found = 0;
    std::uint64_t errors = 0;
    std::uint64_t source_network = 0;  // discover, --request: answers by "source"
    std::uint64_t source_cache = 0;
    std::uint64_t source_other = 0;
    std::vector<std::uint32_t> latency_ns;  // load mode, capped at ~4.29 s
    std::string failure;
    std::string first_error_response;
};

double percentile(std::vector<std::uint32_t>& sorted, double p) {
    if (sorted.empty()) return 0;
    const auto rank =
        static_cast<std::size_t>(std::llround(p / 100.0 * static_cast<double>(sorted.size() - 1)));
    return static_cast<double>(sorted[std::min(rank, sorted.size() - 1)]) / 1000.0;
}

double seconds_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

// Answers by `source` are counted for discover and --request (where an answer
// without one, e.g. of `get`, counts as other).
void record(ThreadResult& r, Outcome outcome, const std::string& response, bool sources) {
    ++r.requests;
    if (sources && outcome != Outcome::error) {
        if (contains(response, R"("source":"cache")")) {
            ++r.source_cache;
        } else if (contains(response, R"("source":"network")")) {
            ++r.source_network;
        } else {
            ++r.source_other;
        }
    }
    switch (outcome) {
        case Outcome::found:
            ++r.found;
            break;
        case Outcome::not_found:
            ++r.not_found;
            break;
        case Outcome::error:
            ++r.errors;
            if (r.first_error_response.empty()) r.first_error_response = response;
            break;
    }
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{
        "Load generator for hostkeeperd's socket (see the comment at the top of socket_load.cpp).",
        "hk_bench_socket_load"};
    std::string socket;
    std::size_t clients = 1;
    double seconds = 5;
    std::uint64_t requests = 0;
    std::vector<std::string> hosts;
    bool allow_missing = false;
    std::size_t warm_hosts = 0;
    std::size_t start = 0;
    std::string prefix = "bench-";
    std::string suffix = ".example.com";
    bool store = false;
    double max_seconds = 0;
    std::size_t token_length = 90;
    std::string label;
    std::string op = "get";
    std::vector<std::string> request_texts;
    bool receive_fds = false;
    app.add_option("--socket", socket, "hostkeeperd's socket")->required();
    app.add_flag("--receive-fds", receive_fds,
                 "read each reply with recvmsg, and a descriptor passed with it whole");
    app.add_option("--clients", clients, "concurrent connections, one thread each")
        ->check(CLI::Range(1, 4096))
        ->capture_default_str();
    app.add_option("--seconds", seconds, "load mode: run this long")
        ->check(CLI::Range(0.01, 3600.0))
        ->capture_default_str();
    app.add_option("--requests", requests,
                   "load mode: send this many requests in all instead of running for --seconds");
    app.add_option("--host", hosts,
                   "load mode: host(s) to ask for, round robin (repeat the option)");
    app.add_option("--op", op, "load mode: the request sent, get or discover")
        ->check(CLI::IsMember({"get", "discover"}))
        ->capture_default_str();
    app.add_option("--request", request_texts,
                   "load mode: send this request (a JSON object with \"op\"; \"v\":1 added when "
                   "absent) instead of "
                   "--op's, round robin (repeat the option; not with --host)");
    app.add_flag("--allow-missing", allow_missing,
                 "load mode: a `found: false` or not_found answer is not an error");
    app.add_option("--warm-hosts", warm_hosts,
                   "warm mode: one request for each of this many hosts");
    app.add_option("--start", start, "warm mode: first index")->capture_default_str();
    app.add_option("--prefix", prefix, "warm mode: hosts are <prefix><i><suffix>")
        ->capture_default_str();
    app.add_option("--suffix", suffix, "warm mode: see --prefix")->capture_default_str();
    app.add_flag("--store", store, "warm mode: store a token for each host instead of getting it");
    app.add_option("--max-seconds", max_seconds,
                   "warm mode: claim no new host after this long; 0: no limit");
    app.add_option("--token-length", token_length, "warm mode with --store: token length in bytes")
        ->capture_default_str();
    app.add_option("--label", label, "copied into the JSON output");
    CLI11_PARSE(app, argc, argv);

    const bool warm = warm_hosts > 0;
    if (!request_texts.empty() && (warm || !hosts.empty() || app.count("--op") > 0)) {
        std::fprintf(stderr,
                     "hk_bench_socket_load: --request is for load mode, without --host or --op\n");
        return 2;
    }
    if (!warm && hosts.empty() && request_texts.empty()) {
        std::fprintf(stderr,
                     "hk_bench_socket_load: give --host or --request (load mode) or --warm-hosts "
                     "(warm mode)\n");
        return 2;
    }
    const Kind kind = !request_texts.empty() ? Kind::request
                      : op == "discover"     ? Kind::discover
                                             : Kind::get;
    if (warm && kind == Kind::discover) {
        std::fprintf(stderr, "hk_bench_socket_load: --op discover is for load mode (--host)\n");
        return 2;
    }
    const bool sources = kind != Kind::get;

    std::vector<ThreadResult> results(clients);
    std::atomic<std::size_t> next_index{0};
    std::atomic<std::size_t> connected{0};
    std::atomic<bool> go{false};
    std::atomic<bool> stop_claiming{false};
    Clock::time_point t0;
    Clock::time_point end;
    std::vector<std::string> frames;
    frames.reserve(hosts.size() + request_texts.size());
    for (const auto& h : hosts)
        frames.push_back(kind == Kind::discover ? discover_frame(h) : get_frame(h));
    std::string request_ops;  // the output's "op" for --request: theirs, "a,b" when they differ
    for (const auto& text : request_texts) {
        try {
            frames.push_back(request_frame(text));
            const std::string request_op = proto::parse_payload(text).at("op").get<std::string>();
            if (!contains("," + request_ops + ",", "," + request_op + ",")) {
                request_ops += (request_ops.empty() ? "" : ",") + request_op;
            }
        } catch (const std::exception& e) {
            std::fprintf(stderr, "hk_bench_socket_load: bad --request: %s\n", e.what());
            return 2;
        }
    }
    const std::uint64_t per_client = requests > 0 ? (requests + clients - 1) / clients : 0;

    auto worker = [&](std::size_t id) {
        ThreadResult& r = results[id];
        bool counted = false;
        try {
            Client client(socket, receive_fds);
            connected.fetch_add(1);
            counted = true;
            while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
            bool first = true;
            if (warm) {
                while (!stop_claiming.load(std::memory_order_relaxed)) {
                    const std::size_t i = next_index.fetch_add(1);
                    if (i >= warm_hosts) break;
                    const std::size_t index = start + i;
                    std::string host = prefix;
                    host.append(std::to_string(index)).append(suffix);
                    const std::string frame =
                        store ? store_frame(host, index, token_length) : get_frame(host);
                    const std::string& response = client.round_trip(frame);
                    record(r, classify(response, first, Kind::get), response, false);
                    first = false;
                    if (max_seconds > 0 && seconds_between(t0, Clock::now()) >= max_seconds) {
                        stop_claiming.store(true);
                    }
                }
                return;
            }
            r.latency_ns.reserve(per_client > 0 ? per_client : 1 << 20);
            std::size_t k = id % frames.size();
            while (true) {
                const Clock::time_point sent = Clock::now();
                if (per_client > 0 ? r.requests >= per_client : sent >= end) break;
                const std::string& response = client.round_trip(frames[k]);
                const Clock::time_point received = Clock::now();
                if (per_client == 0 && received > end)
                    break;  // count only what finished in the window
                record(r, classify(response, first, kind), response, sources);
                first = false;
                const auto ns =
                    std::chrono::duration_cast<std::chrono::nanoseconds>(received - sent).count();
                r.latency_ns.push_back(
                    static_cast<std::uint32_t>(std::min<long long>(ns, UINT32_MAX)));
                if (++k == frames.size()) k = 0;
            }
        } catch (const std::exception& e) {
            r.failure = e.what();
            if (!counted) connected.fetch_add(1);  // do not leave the others waiting
        }
    };

    std::vector<std::thread> threads;
    threads.reserve(clients);
    for (std::size_t i = 0; i < clients; ++i) threads.emplace_back(worker, i);
    while (connected.load() < clients) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    t0 = Clock::now();
    end = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    go.store(true, std::memory_order_release);
    for (auto& t : threads) t.join();
    const Clock::time_point finished = Clock::now();
    const double elapsed =
        warm || per_client > 0 ? seconds_between(t0, finished) : seconds_between(t0, end);

    ThreadResult total;
    std::vector<std::uint32_t> latencies;
    std::string failure;
    for (auto& r : results) {
        total.requests += r.requests;
        total.found += r.found;
        total.not_found += r.not_found;
        total.errors += r.errors;
        total.source_network += r.source_network;
        total.source_cache += r.source_cache;
        total.source_other += r.source_other;
        if (failure.empty() && !r.failure.empty()) failure = r.failure;
        if (total.first_error_response.empty()) total.first_error_response = r.first_error_response;
        latencies.insert(latencies.end(), r.latency_ns.begin(), r.latency_ns.end());
    }
    const double rate = elapsed > 0 ? static_cast<double>(total.requests) / elapsed : 0;

    Json out;
    if (!label.empty()) out["label"] = label;
    out["mode"] = warm ? "warm" : "load";
    out["op"] = warm && store ? "store" : kind == Kind::request ? request_ops : op;
    out["clients"] = clients;
    out["seconds"] = elapsed;
    out["requests"] = total.requests;
    out["requests_per_s"] = rate;
    out["found"] = total.found;
    out["not_found"] = total.not_found;
    out["errors"] = total.errors;
    if (sources) {
        out["sources"] = {{"network", total.source_network},
                          {"cache", total.source_cache},
                          {"other", total.source_other}};
    }
    if (warm) {
        // Every claimed index was sent (or its thread failed, reported below).
        out["first_host"] = prefix + std::to_string(start) + suffix;
        out["hosts_done"] = std::min(next_index.load(), warm_hosts);
        out["stopped_by_time_limit"] = stop_claiming.load() && next_index.load() < warm_hosts;
    } else {
        std::sort(latencies.begin(), latencies.end());
        out["latency_us"] = {{"p50", percentile(latencies, 50)},
                             {"p90", percentile(latencies, 90)},
                             {"p99", percentile(latencies, 99)},
                             {"max", percentile(latencies, 100)}};
    }
    if (!failure.empty()) out["failure"] = failure;
    if (!total.first_error_response.empty())
        out["first_error_response"] = total.first_error_response;
    std::printf("%s\n", out.dump().c_str());

    const bool missing_is_error = !warm && !allow_missing && total.not_found > 0;
    return failure.empty() && total.errors == 0 && !missing_is_error ? 0 : 1;
}
