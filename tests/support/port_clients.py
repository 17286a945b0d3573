#!/usr/bin/env python3
"""Clients of hostkeeper-portd for the registry port's tests (tests/e2e/port_subuid.sh,
tests/e2e/port_service.sh).

port_clients.py hog DIR GREETINGS CONNECTIONS
    Holds GREETINGS half-open link connections (a request line never
    finished) on $HOSTKEEPER_PORT_SOCKET and CONNECTIONS TCP connections to
    127.0.0.1:$HK_REGISTRY_PORT (a request never sent), until DIR/stop
    exists: one that portd held and then ended (its deadline) is opened
    again at once, one refused at once after a pause. Writes DIR/ready-UID
    once all were first opened, and DIR/count-UID (counts of what portd did)
    a few times a second while they change: greeting_error (refused with an `error` line), greeting_closed
    (closed without a line: refused silently, or its deadline passed),
    tcp_503, tcp_reset, tcp_closed.
port_clients.py daemon LOG
    A registered daemon: registers, then answers every handed connection
    with 200 and the marker its request carried. LOG gets "registered REPLY"
    ("bad reply" after anything but "ok PORT"), one "served MARKER" per
    connection, and "link ended" or "protocol error ..." at the end.
port_clients.py request MARKER TIMEOUT [CONNECTED]
    One GET to 127.0.0.1:$HK_REGISTRY_PORT; prints its status line (or RESET
    or TIMEOUT), then its body. With CONNECTED, that file is made once the
    connection is established, before the request is sent.
"""
import errno
import os
import select
import socket
import sys
import threading
import time

SOCKET = os.environ.get('HOSTKEEPER_PORT_SOCKET', '/run/hostkeeper/port.sock')
PORT = int(os.environ.get('HK_REGISTRY_PORT', '585'))
# A connection that ended sooner than HELD after it was opened was refused:
# it is opened again after REOPEN_PAUSE, so that the hogs do not spin. One
# that portd held (until its deadline) is opened again at once, so that the
# tables stay full.
HELD = 1.0
REOPEN_PAUSE = 0.5


def write_atomically(path, text):
    """Written aside (a name no glob of the test matches), then renamed."""
    aside = os.path.join(os.path.dirname(path), '.' + os.path.basename(path) + '.tmp')
    with open(aside, 'w') as f:
        f.write(text)
    os.replace(aside, path)


class Hog:
    def __init__(self, directory, greetings, connections):
        self.dir = directory
        self.want = {'greeting': greetings, 'tcp': connections}
        self.open = {}  # fd -> (kind, socket, when opened)
        self.reopen_at = []  # (time, kind)
        self.counts = dict.fromkeys(
            ['greeting_error', 'greeting_closed', 'tcp_503', 'tcp_reset', 'tcp_closed'], 0)
        self.poller = select.poll()
        self.uid = os.getuid()
        self.changed = True
        self.written_at = 0.0

    def open_one(self, kind):
        try:
            if kind == 'greeting':
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.setblocking(False)
                s.connect(SOCKET)
                s.send(b'hostkeeper-port 1 ')  # and never the rest of the line
            else:
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.setblocking(False)
                err = s.connect_ex(('127.0.0.1', PORT))
                if err not in (0, errno.EINPROGRESS):
                    raise OSError(err, os.strerror(err))
        except OSError:
            self.count(kind + ('_closed' if kind == 'greeting' else '_reset'))
            self.reopen_at.append((time.monotonic() + REOPEN_PAUSE, kind))
            return
        self.open[s.fileno()] = (kind, s, time.monotonic())
        self.poller.register(s.fileno(), select.POLLIN)

    def count(self, what):
        self.counts[what] += 1
        self.changed = True

    def write_counts(self):
        write_atomically(os.path.join(self.dir, 'count-%d' % self.uid),
                         ' '.join('%s=%d' % kv for kv in sorted(self.counts.items())) + '\n')
        self.changed = False
        self.written_at = time.monotonic()

    def ended(self, fd):
        kind, s, opened = self.open.pop(fd)
        self.poller.unregister(fd)
        try:
            data = s.recv(4096)
        except ConnectionResetError:
            data = None
        except OSError:
            data = b''
        s.close()
        if kind == 'greeting':
            self.count('greeting_error' if data and data.startswith(b'error ') else 'greeting_closed')
        elif data is None:
            self.count('tcp_reset')
        elif data.startswith(b'HTTP/1.1 503'):
            self.count('tcp_503')
        else:
            self.count('tcp_closed')
        now = time.monotonic()
        self.reopen_at.append((now if now - opened >= HELD else now + REOPEN_PAUSE, kind))

    def run(self):
        for kind, n in self.want.items():
            for _ in range(n):
                self.open_one(kind)
        write_atomically(os.path.join(self.dir, 'ready-%d' % self.uid), 'ready\n')
        stop = os.path.join(self.dir, 'stop')
        while not os.path.exists(stop):
            for fd, _ in self.poller.poll(50):
                self.ended(fd)
            now = time.monotonic()
            due = [k for t, k in self.reopen_at if t <= now]
            self.reopen_at = [(t, k) for t, k in self.reopen_at if t > now]
            for kind in due:
                self.open_one(kind)
            if self.changed and now - self.written_at >= 0.2:
                self.write_counts()
        return 0


def read_line(s):
    line = b''
    while not line.endswith(b'\n'):
        c = s.recv(1)
        if not c:
            break
        line += c
    return line


def daemon(log_path):
    log = open(log_path, 'a', buffering=1)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    try:
        s.connect(SOCKET)
        s.sendall(b'hostkeeper-port 1 register\n')
        reply = read_line(s)
    except OSError as e:
        reply = ('%s' % e).encode()
    log.write('registered %r\n' % reply)
    if reply != b'ok %d\n' % PORT:
        log.write('bad reply\n')
        return 1
    s.settimeout(None)

    def serve(conn):
        conn.settimeout(10)
        data = b''
        try:
            while b'\r\n\r\n' not in data:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                data += chunk
            marker = b'?'
            for line in data.split(b'\r\n'):
                if line.lower().startswith(b'x-marker:'):
                    marker = line.split(b':', 1)[1].strip()
            body = b'served by uid %d: %s' % (os.getuid(), marker)
            conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n'
                         % len(body) + body)
            log.write('served %s\n' % marker.decode(errors='replace'))
        except OSError as e:
            log.write('connection error %s\n' % e)
        finally:
            conn.close()

    while True:
        msg, fds, _, _ = socket.recv_fds(s, 1, 4)
        if not msg:
            log.write('link ended\n')
            return 0
        if msg != b'c' or len(fds) != 1:
            log.write('protocol error %r %r\n' % (msg, fds))
            return 1
        threading.Thread(target=serve, args=(socket.socket(fileno=fds[0]),), daemon=True).start()


def http(host, marker, timeout, connected=None):
    """One GET to [host]:PORT carrying `marker`: (status line, or 'RESET',
    'TIMEOUT', 'CLOSED'; body; seconds taken). With `connected`, that file is
    made once the connection is established, before the request is sent."""
    family = socket.AF_INET6 if ':' in host else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(timeout)
    started = time.monotonic()
    try:
        s.connect((host, PORT))
        if connected:
            write_atomically(connected, 'connected\n')
        s.sendall(b'GET /v1/modules/x HTTP/1.1\r\nHost: registry.example\r\nX-Marker: ' +
                  marker.encode() + b'\r\nConnection: close\r\n\r\n')
        data = b''
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except ConnectionResetError:
        return 'RESET', b'', time.monotonic() - started
    except socket.timeout:
        return 'TIMEOUT', b'', time.monotonic() - started
    finally:
        s.close()
    head, _, body = data.partition(b'\r\n\r\n')
    status = head.split(b'\r\n')[0].decode(errors='replace') or 'CLOSED'
    return status, body, time.monotonic() - started


def request(marker, timeout, connected=None):
    status, body, _ = http('127.0.0.1', marker, timeout, connected)
    print(status)
    print(body.decode(errors='replace'))
    return 0


def main(argv):
    if len(argv) == 5 and argv[1] == 'hog':
        return Hog(argv[2], int(argv[3]), int(argv[4])).run()
    if len(argv) == 3 and argv[1] == 'daemon':
        return daemon(argv[2])
    if len(argv) in (4, 5) and argv[1] == 'request':
        return request(argv[2], float(argv[3]), argv[4] if len(argv) == 5 else None)
    sys.stderr.write(__doc__)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
