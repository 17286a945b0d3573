#!/usr/bin/env python3
"""The other local user of tests/e2e/port_takeover.sh (stdlib only).

    port_squatter.py squat PORT DIR MARKER [--pause-ms N]
    port_squatter.py flood PORT COUNT BATCH INTERVAL_MS SECONDS OUT

squat: until SIGTERM or SIGINT, tries again and again to bind PORT on
127.0.0.1, [::1], 0.0.0.0 and [::] (each plainly, with SO_REUSEADDR, with
SO_REUSEPORT and with both), PAUSE ms (default 1) between rounds so that the
victim's terraform keeps a CPU. DIR/report.json (rewritten atomically every
0.2 s and on exit) holds {"attempts", "binds", "errnos": {NAME: COUNT},
"bound": ["ADDRESS OPTIONS", ...], "requests", "rounds", "pid", "uid",
"final"}. Should a bind ever succeed, the socket listens and serves a
malicious module registry on it: every request is appended to
DIR/requests.jsonl (method, path, headers verbatim), discovery, versions and
download documents point at a module whose terraform_data resource's
local-exec creates MARKER; so the victim test asserts binds == 0, no
requests and no MARKER.

flood: opens COUNT TCP connections to 127.0.0.1:PORT, BATCH at a time every
INTERVAL_MS (non-blocking connects), each sending one small HTTP request,
and follows each until it is answered, reset or closed, or until SECONDS
have passed since the start (then closes the rest). Writes to OUT one line
"opened=N refused=N answered_503=N other_answer=N reset=N closed=N
unanswered=N"; OUT.started appears once the first batch is out.
"""
import errno
import io
import json
import os
import resource
import select
import signal
import socket
import sys
import tarfile
import threading
import time

OPTIONS = (
    ("plain", ()),
    ("SO_REUSEADDR", (socket.SO_REUSEADDR,)),
    ("SO_REUSEPORT", (socket.SO_REUSEPORT,)),
    ("SO_REUSEADDR+SO_REUSEPORT", (socket.SO_REUSEADDR, socket.SO_REUSEPORT)),
)


def addresses():
    """(label, family, address, v6only) for each address tried."""
    out = [("127.0.0.1", socket.AF_INET, "127.0.0.1", None),
           ("0.0.0.0", socket.AF_INET, "0.0.0.0", None)]
    try:
        probe = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        probe.close()
        out.append(("[::1]", socket.AF_INET6, "::1", 1))
        out.append(("[::]", socket.AF_INET6, "::", 0))  # dual stack: 127.0.0.1 too
    except OSError:
        pass
    return out


def evil_archive(marker):
    """A module tarball whose apply creates marker (and says so)."""
    main_tf = ('resource "terraform_data" "pwn" {\n'
               '  provisioner "local-exec" {\n'
               '    command = "touch %s"\n'
               '  }\n'
               '}\n\n'
               'output "greeting" {\n  value = "pwned"\n}\n' % marker).encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("main.tf")
        info.size = len(main_tf)
        info.mode = 0o644
        tar.addfile(info, io.BytesIO(main_tf))
    return buf.getvalue()


class Squatter:
    def __init__(self, port, directory, marker, pause):
        self.port = port
        self.dir = directory
        self.marker = marker
        self.pause = pause
        self.lock = threading.Lock()
        self.attempts = 0
        self.binds = 0
        self.rounds = 0
        self.requests = 0
        self.errnos = {}
        self.bound = []
        self.listeners = []
        self.stop = threading.Event()
        self.archive = evil_archive(marker)

    # ---- the report ------------------------------------------------------
    def report(self, final=False):
        with self.lock:
            data = {"attempts": self.attempts, "binds": self.binds, "errnos": dict(self.errnos),
                    "bound": list(self.bound), "requests": self.requests, "rounds": self.rounds,
                    "pid": os.getpid(), "uid": os.getuid(), "final": final}
        path = os.path.join(self.dir, "report.json")
        with open(path + ".tmp", "w", encoding="ascii") as f:
            json.dump(data, f)
        os.replace(path + ".tmp", path)

    def reporter(self):
        while not self.stop.wait(0.2):
            self.report()

    # ---- trying to bind --------------------------------------------------
    def try_once(self, label, family, address, v6only, option_name, options):
        s = socket.socket(family, socket.SOCK_STREAM)
        try:
            for option in options:
                s.setsockopt(socket.SOL_SOCKET, option, 1)
            if v6only is not None:
                s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, v6only)
            s.bind((address, self.port))
            s.listen(64)
        except OSError as e:
            s.close()
            name = errno.errorcode.get(e.errno, str(e.errno))
            with self.lock:
                self.attempts += 1
                self.errnos[name] = self.errnos.get(name, 0) + 1
            return
        with self.lock:
            self.attempts += 1
            self.binds += 1
            self.bound.append("%s:%d %s" % (label, self.port, option_name))
        self.report()
        self.listeners.append(s)
        threading.Thread(target=self.serve, args=(s,), daemon=True).start()

    def squat(self):
        tries = [(a, o) for a in addresses() for o in OPTIONS]
        while not self.stop.is_set():
            for (label, family, address, v6only), (option_name, options) in tries:
                self.try_once(label, family, address, v6only, option_name, options)
            with self.lock:
                self.rounds += 1
            if self.pause:
                self.stop.wait(self.pause)

    # ---- what a successful squatter would do ------------------------------
    def serve(self, listener):
        while not self.stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=self.answer, args=(conn,), daemon=True).start()

    def answer(self, conn):
        conn.settimeout(10)
        try:
            data = b""
            while b"\r\n\r\n" not in data and len(data) < 65536:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                data += chunk
            head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
            method, path = (head[0].split(" ") + ["", ""])[:2]
            headers = [line.split(":", 1) for line in head[1:] if ":" in line]
            with self.lock:
                self.requests += 1
                with open(os.path.join(self.dir, "requests.jsonl"), "a", encoding="utf-8") as f:
                    f.write(json.dumps({"method": method, "path": path,
                                        "headers": [[k, v.strip()] for k, v in headers]}) + "\n")
            self.report()
            base = "http://127.0.0.1:%d" % self.port
            status, extra, body = 200, [], b""
            if path.endswith("/.well-known/terraform.json"):
                body = json.dumps({"modules.v1": base + "/v1/modules/",
                                   "providers.v1": base + "/v1/providers/"}).encode()
            elif "/modules/" in path and path.endswith("/versions"):
                body = b'{"modules":[{"versions":[{"version":"1.0.0"}]}]}'
            elif "/modules/" in path and path.endswith("/download"):
                status, extra = 204, [("X-Terraform-Get", base + "/evil/module.tar.gz")]
            elif path.endswith(".tar.gz"):
                body = self.archive
            else:
                status, body = 404, b'{"errors":["not found"]}'
            reason = {200: "OK", 204: "No Content", 404: "Not Found"}[status]
            lines = ["HTTP/1.1 %d %s" % (status, reason), "Content-Length: %d" % len(body),
                     "Connection: close"] + ["%s: %s" % kv for kv in extra]
            conn.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        except OSError:
            pass
        finally:
            conn.close()


def squat(argv):
    if len(argv) not in (3, 5):
        print(__doc__, file=sys.stderr)
        return 2
    port, directory, marker = int(argv[0]), argv[1], argv[2]
    pause = 0.001
    if len(argv) == 5 and argv[3] == "--pause-ms":
        pause = int(argv[4]) / 1000.0
    squatter = Squatter(port, directory, marker, pause)
    stop_signals = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)  # threads inherit the mask
    squatter.report()
    threads = [threading.Thread(target=squatter.squat), threading.Thread(target=squatter.reporter)]
    for t in threads:
        t.start()
    signal.sigwait(stop_signals)
    squatter.stop.set()
    for t in threads:
        t.join()
    for s in squatter.listeners:
        s.close()
    squatter.report(final=True)
    return 0


def flood(argv):
    if len(argv) != 6:
        print(__doc__, file=sys.stderr)
        return 2
    port, count, batch = int(argv[0]), int(argv[1]), int(argv[2])
    interval, seconds, out = int(argv[3]) / 1000.0, float(argv[4]), argv[5]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, count + 256)), hard))
    request = b"GET /flood HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    started = time.monotonic()
    deadline = started + seconds
    poller = select.poll()
    sockets = {}  # fd -> [socket, connected]
    tally = {"opened": 0, "refused": 0, "answered_503": 0, "other_answer": 0, "reset": 0,
             "closed": 0}
    made = 0
    next_batch = started

    def finish(fd, outcome):
        s = sockets.pop(fd)[0]
        poller.unregister(fd)
        s.close()
        tally[outcome] += 1

    while time.monotonic() < deadline and (made < count or sockets):
        now = time.monotonic()
        if made < count and now >= next_batch:
            for _ in range(min(batch, count - made)):
                made += 1
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.setblocking(False)
                err = s.connect_ex(("127.0.0.1", port))
                if err not in (0, errno.EINPROGRESS):
                    s.close()
                    tally["refused"] += 1
                    continue
                tally["opened"] += 1
                sockets[s.fileno()] = [s, False]
                poller.register(s.fileno(), select.POLLOUT | select.POLLIN)
            if made <= batch:
                with open(out + ".started", "w", encoding="ascii") as f:
                    f.write("started\n")
            next_batch += interval
        for fd, events in poller.poll(10):
            entry = sockets.get(fd)
            if entry is None:
                continue
            s = entry[0]
            if not entry[1] and events & select.POLLOUT:
                err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if err:
                    finish(fd, "reset" if err == errno.ECONNRESET else "refused")
                    continue
                entry[1] = True
                try:
                    s.send(request)
                except OSError:
                    finish(fd, "reset")
                    continue
                poller.modify(fd, select.POLLIN)
                continue
            if events & (select.POLLIN | select.POLLERR | select.POLLHUP):
                try:
                    data = s.recv(4096)
                except ConnectionResetError:
                    finish(fd, "reset")
                    continue
                except OSError:
                    finish(fd, "other_answer")
                    continue
                if data.startswith(b"HTTP/1.1 503"):
                    finish(fd, "answered_503")
                elif not data:
                    finish(fd, "closed")
                else:
                    finish(fd, "other_answer")
    tally["unanswered"] = len(sockets)
    for entry in sockets.values():
        entry[0].close()
    with open(out, "w", encoding="ascii") as f:
        f.write(" ".join("%s=%d" % (k, tally[k]) for k in
                         ("opened", "refused", "answered_503", "other_answer", "reset", "closed",
                          "unanswered")) + "\n")
    return 0


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("squat", "flood"):
        print(__doc__, file=sys.stderr)
        return 2
    return squat(sys.argv[2:]) if sys.argv[1] == "squat" else flood(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
