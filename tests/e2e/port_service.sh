#!/usr/bin/env bash
# port_service.sh BIN_DIR
#
# The registry port end to end, under support/port-env.sh (a real
# hostkeeper-portd as nobody, handed its sockets as PID 1 would, in a private
# network namespace), with two throw-away users A and B:
#   a. neither can bind the port on 127.0.0.1 or [::1], portd running or not;
#   b. a client whose user has no registered daemon gets the 503 with its
#      reason phrase;
#   c. A's registered (fake) daemon receives A's connections and answers
#      them; B's never reach it (B is answered 503, or reset);
#   d. a probe from another process answers "ok PORT";
#   e. while B floods the port with 2,000 connections, every request of A is
#      answered (latencies printed, not asserted);
#   f. garbage on the link socket (random bytes, an over-long line, a second
#      line after register) ends that link, and A's daemon is still served.
# Exit 0 pass, 1 fail, 2 setup error, 77 skip.
set -uo pipefail
# shellcheck source=../support/script_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/script_lib.sh"
[[ $# -eq 1 ]] || die "usage: $0 BIN_DIR"
[[ $(id -u) -eq 0 ]] || skip "needs root (useradd, setpriv)"
[[ -n ${HOSTKEEPER_PORT_SOCKET:-} && -n ${HK_REGISTRY_PORT:-} && -n ${HK_PORTD_PID:-} ]] ||
    die "run it under tests/support/port-env.sh"
for tool in useradd userdel setpriv; do
    command -v "$tool" >/dev/null || skip "$tool is not installed"
done
# The system's Python: the throw-away users must be able to run it (a
# per-user installation such as pyenv's under /root is not theirs).
py=/usr/bin/python3
[[ -x $py ]] || skip "$py is not installed"
port=$HK_REGISTRY_PORT

# Every check runs; the script fails at the end when one did.
failures=0
check_failed() { echo "FAIL: $*"; failures=$((failures + 1)); }

work=$(mktemp -d /tmp/hk-port-e2e.XXXXXX)
chmod 0755 "$work"
users=()
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null; done
    for user in "${users[@]}"; do userdel "$user" 2>/dev/null; done
    rm -rf "$work"
}
on_exit cleanup
trap 'exit 130' INT TERM

make_user() {
    local name=$1
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$name" ||
        die "useradd $name failed"
    users+=("$name")
}
user_a=hk-port-a-$$
user_b=hk-port-b-$$
make_user "$user_a"
make_user "$user_b"
uid_a=$(id -u "$user_a")
uid_b=$(id -u "$user_b")
gid_a=$(id -g "$user_a")
gid_b=$(id -g "$user_b")
# A background job of a function would be a subshell whose pid is not the
# program's: these exec, so that $! is the program itself.
as_a() { setpriv --reuid="$uid_a" --regid="$gid_a" --clear-groups "$@"; }
as_b() { setpriv --reuid="$uid_b" --regid="$gid_b" --clear-groups "$@"; }
start_as_a() { exec setpriv --reuid="$uid_a" --regid="$gid_a" --clear-groups "$@"; }
start_as_b() { exec setpriv --reuid="$uid_b" --regid="$gid_b" --clear-groups "$@"; }
mkdir -m 0700 "$work/a" "$work/b"
chown "$uid_a:$gid_a" "$work/a"
chown "$uid_b:$gid_b" "$work/b"

# The clients and the fake daemon, in one script each user may read.
tool=$work/port_tool.py
cat >"$tool" <<'PY'
import errno, os, random, resource, select, socket, sys, time

# The shared clients (the fake daemon, http, read_line), copied beside this file.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import port_clients
from port_clients import http, read_line

sock_path = os.environ['HOSTKEEPER_PORT_SOCKET']
port = int(os.environ['HK_REGISTRY_PORT'])


def link(request, timeout=5):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(sock_path)
    s.sendall(request)
    return s


def bind(host):
    family = socket.AF_INET6 if ':' in host else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    if family == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    try:
        s.bind((host, port))
        s.listen(1)
        print('BOUND')
        return 0
    except OSError as e:
        print(errno.errorcode.get(e.errno, str(e.errno)))
        return 0


def flood(count, seconds):
    """count connections to 127.0.0.1:port at once (non-blocking), each
    followed until reset, answered or closed, or until `seconds` pass."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, count + 256), hard))
    open_sockets = {}
    refused = 0
    for _ in range(count):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        err = s.connect_ex(('127.0.0.1', port))
        if err not in (0, errno.EINPROGRESS):
            refused += 1
            s.close()
            continue
        open_sockets[s.fileno()] = s
    outcomes = {'reset': refused, '503': 0, 'closed': 0, 'other': 0}
    deadline = time.monotonic() + seconds
    poller = select.poll()
    for fd in open_sockets:
        poller.register(fd, select.POLLIN)
    while open_sockets and time.monotonic() < deadline:
        for fd, _ in poller.poll(100):
            s = open_sockets.pop(fd)
            poller.unregister(fd)
            try:
                data = s.recv(4096)
                if data.startswith(b'HTTP/1.1 503'):
                    outcomes['503'] += 1
                elif not data:
                    outcomes['closed'] += 1
                else:
                    outcomes['other'] += 1
            except ConnectionResetError:
                outcomes['reset'] += 1
            except OSError:
                outcomes['other'] += 1
            s.close()
    outcomes['unanswered'] = len(open_sockets)
    for s in open_sockets.values():
        s.close()
    print(' '.join('%s=%d' % kv for kv in sorted(outcomes.items())))
    return 0


def requests(count, marker, timeout, out):
    """count sequential requests; writes one latency per line (or FAIL lines)."""
    with open(out, 'w') as f:
        for i in range(count):
            status, body, took = http('127.0.0.1', '%s-%d' % (marker, i), timeout)
            if status.startswith('HTTP/1.1 200') and body.endswith(('%s-%d' % (marker, i)).encode()):
                f.write('%.6f\n' % took)
            else:
                f.write('FAIL %s %r %.3f\n' % (status, body[:80], took))
            time.sleep(0.02)
    return 0


cmd = sys.argv[1]
if cmd == 'fake-daemon':
    sys.exit(port_clients.daemon(sys.argv[2]))
if cmd == 'http':
    status, body, took = http(sys.argv[2], sys.argv[3], float(sys.argv[4]))
    print(status)
    print(body.decode(errors='replace'))
    print('took %.3f' % took)
    sys.exit(0)
if cmd == 'probe':
    s = link(b'hostkeeper-port 1 probe\n')
    print(read_line(s).decode(errors='replace'), end='')
    print('EOF' if s.recv(1) == b'' else 'MORE')
    sys.exit(0)
if cmd == 'bind':
    sys.exit(bind(sys.argv[2]))
if cmd == 'flood':
    sys.exit(flood(int(sys.argv[2]), float(sys.argv[3])))
if cmd == 'requests':
    sys.exit(requests(int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), sys.argv[5]))
if cmd == 'garbage':
    kind = sys.argv[2]
    if kind == 'random':
        data = bytes(random.getrandbits(8) for _ in range(200)).replace(b'\n', b'x') + b'\n'
    elif kind == 'long':
        data = b'hostkeeper-port 1 ' + b'x' * 1000 + b'\n'
    elif kind == 'second-line':
        data = b'hostkeeper-port 1 register\nhostkeeper-port 1 probe\n'
    elif kind == 'later-byte':
        data = b'hostkeeper-port 1 register\n'
    s = link(data)
    first = read_line(s)
    if kind == 'later-byte':
        s.sendall(b'x')
    try:
        rest = s.recv(100)
        ending = 'EOF' if rest == b'' else 'MORE %r' % rest
    except socket.timeout:
        ending = 'OPEN'
    except ConnectionResetError:
        ending = 'EOF'
    print('%s|%s' % (first.decode(errors='replace').strip(), ending))
    sys.exit(0)
sys.exit('unknown command ' + cmd)
PY
chmod 0644 "$tool"
cp "$(dirname "${BASH_SOURCE[0]}")/../support/port_clients.py" "$work/port_clients.py"
chmod 0644 "$work/port_clients.py"
run_tool() { "$py" "$tool" "$@"; }
has_v6=1
"$py" -c 'import socket; s=socket.socket(socket.AF_INET6); s.bind(("::1", 0))' 2>/dev/null || has_v6=0
hosts=(127.0.0.1)
[[ $has_v6 -eq 1 ]] && hosts+=(::1)

wait_probe() {
    for _ in $(seq 100); do
        [[ $(run_tool probe 2>/dev/null | head -1) == "ok $port" ]] && return 0
        sleep 0.1
    done
    return 1
}

echo "== a. nobody but root binds the port"
check_binds() {
    local when=$1 user out
    for user in a b; do
        for host in "${hosts[@]}"; do
            out=$("as_$user" "$py" "$tool" bind "$host")
            if [[ $out == EACCES ]]; then
                pass "user $user cannot bind [$host]:$port $when ($out)"
            else
                check_failed "user $user binding [$host]:$port $when: $out (expected EACCES)"
            fi
        done
    done
}
check_binds "while portd runs"
kill -TERM "$HK_PORTD_PID"
for _ in $(seq 50); do kill -0 "$HK_PORTD_PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$HK_PORTD_PID" 2>/dev/null && die "portd did not stop on SIGTERM"
grep -q "SIGTERM: stopping" "$HK_PORTD_LOG" || check_failed "portd did not log its stop"
check_binds "while portd is stopped"
restarted=$("$HK_PORTD_RESTART")
pids+=("$restarted")
wait_probe || die "portd did not come back: $(cat "$HK_PORTD_LOG")"

echo "== b. no daemon registered: 503 with the reason"
for host in "${hosts[@]}"; do
    out=$(as_a "$py" "$tool" http "$host" none-1 10)
    status=$(head -1 <<<"$out")
    if [[ $status == "HTTP/1.1 503 hostkeeperd is not running for this user (run: hostkeeper doctor)" ]] &&
        grep -q "not running for uid $uid_a" <<<"$out"; then
        pass "[$host]: $status ($(tail -1 <<<"$out"))"
    else
        check_failed "[$host] without a daemon: $out"
    fi
done

echo "== c. A's daemon gets A's connections, never B's"
start_as_a "$py" "$tool" fake-daemon "$work/a/daemon.log" &
pids+=($!)
daemon_a=$!
for _ in $(seq 50); do grep -q registered "$work/a/daemon.log" 2>/dev/null && break; sleep 0.1; done
grep -q "registered b'ok $port" "$work/a/daemon.log" 2>/dev/null || check_failed "A's daemon did not register: $(cat "$work/a/daemon.log" 2>&1)"
grep -q "registered the daemon of uid $uid_a" "$HK_PORTD_LOG" || check_failed "portd did not log A's registration"
for host in "${hosts[@]}"; do
    out=$(as_a "$py" "$tool" http "$host" "a-$host" 5)
    if [[ $(head -1 <<<"$out") == "HTTP/1.1 200 OK" ]] && grep -q "served by uid $uid_a: a-$host" <<<"$out"; then
        pass "[$host]: A's request was answered by A's daemon"
    else
        check_failed "[$host]: A's request: $out"
    fi
    out=$(as_b "$py" "$tool" http "$host" "b-$host" 10)
    status=$(head -1 <<<"$out")
    if [[ $status == "HTTP/1.1 503 "* || $status == RESET ]]; then
        pass "[$host]: B's request was not A's daemon's: $status"
    else
        check_failed "[$host]: B's request: $out"
    fi
done
# And root's (a third user) neither.
out=$("$py" "$tool" http 127.0.0.1 root-1 10)
[[ $(head -1 <<<"$out") == "HTTP/1.1 503 "* ]] || check_failed "root's request: $out"
if grep -q "served b-\|served root-" "$work/a/daemon.log"; then
    check_failed "A's daemon received another user's connection: $(cat "$work/a/daemon.log")"
else
    pass "A's daemon log holds only A's requests ($(grep -c served "$work/a/daemon.log") served)"
fi
# B registers a daemon too: each user's requests land at their own.
start_as_b "$py" "$tool" fake-daemon "$work/b/daemon.log" &
pids+=($!)
for _ in $(seq 50); do grep -q registered "$work/b/daemon.log" 2>/dev/null && break; sleep 0.1; done
out_a=$(as_a "$py" "$tool" http 127.0.0.1 a-again 5)
out_b=$(as_b "$py" "$tool" http 127.0.0.1 b-own 5)
if grep -q "served by uid $uid_a: a-again" <<<"$out_a" && grep -q "served by uid $uid_b: b-own" <<<"$out_b" &&
    ! grep -q "served b-" "$work/a/daemon.log" && ! grep -q "served a-" "$work/b/daemon.log"; then
    pass "with both registered, each user's request reached their own daemon"
else
    check_failed "two daemons: A got '$out_a', B got '$out_b'"
fi
kill -TERM "${pids[-1]}" 2>/dev/null
wait "${pids[-1]}" 2>/dev/null
unset 'pids[-1]'
for _ in $(seq 50); do grep -q "registration of uid $uid_b ended" "$HK_PORTD_LOG" && break; sleep 0.1; done
grep -q "registration of uid $uid_b ended" "$HK_PORTD_LOG" || check_failed "B's registration did not end with its daemon"

echo "== d. a probe answers the port"
out=$(as_b "$py" "$tool" probe)
if [[ $out == "ok $port"$'\n'"EOF" ]]; then pass "probe: ok $port, then closed"; else check_failed "probe: $out"; fi

echo "== e. B floods; A is still served"
# A's requests, one every 20 ms for about 2 s; B's burst lands in the middle.
start_as_a "$py" "$tool" requests 100 flood 5 "$work/a/latency.txt" &
requests_pid=$!
pids+=("$requests_pid")
sleep 0.5
as_b "$py" "$tool" flood 2000 15 >"$work/flood.out" 2>&1
wait "$requests_pid"
echo "flood from B: $(cat "$work/flood.out")"
if grep -q FAIL "$work/a/latency.txt" 2>/dev/null || [[ $(wc -l <"$work/a/latency.txt") -ne 100 ]]; then
    check_failed "A's requests during the flood: $(grep FAIL "$work/a/latency.txt" | head -5)"
else
    "$py" - "$work/a/latency.txt" <<'PY'
import sys
values = sorted(float(line) for line in open(sys.argv[1]))
def pct(p):
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))] * 1000
print('PASS: all %d requests of A answered during the flood: p50 %.1f ms, p99 %.1f ms, max %.1f ms'
      % (len(values), pct(50), pct(99), values[-1] * 1000))
PY
fi
grep -q "unanswered=0" "$work/flood.out" || echo "note: some of B's flood connections were still open after 15 s"

echo "== f. garbage on the link socket ends that link only"
for kind in random long second-line later-byte; do
    out=$(as_b "$py" "$tool" garbage "$kind")
    case $kind in
        random | long) [[ $out == "error "*"|EOF" ]] ;;
        second-line | later-byte) [[ $out == "ok $port|EOF" ]] ;;
    esac && pass "link garbage ($kind): $out" || check_failed "link garbage ($kind): $out"
done
out=$(as_a "$py" "$tool" http 127.0.0.1 a-after-garbage 5)
if grep -q "served by uid $uid_a: a-after-garbage" <<<"$out" && ! grep -q "link ended" "$work/a/daemon.log"; then
    pass "A's daemon kept its registration and still gets A's connections"
else
    check_failed "A after the garbage: $out / $(tail -3 "$work/a/daemon.log")"
fi
kill -0 "$daemon_a" 2>/dev/null || check_failed "A's fake daemon died: $(tail -3 "$work/a/daemon.log")"

# portd logs its counters on SIGUSR1.
kill -USR1 "$restarted" 2>/dev/null && sleep 0.3
echo "portd's log:"
sed 's/^/    /' "$HK_PORTD_LOG" | tail -40
if [[ $failures -ne 0 ]]; then
    echo "port_service.sh: $failures failure(s)"
    exit 1
fi
echo "port_service.sh: all passed"
exit 0
