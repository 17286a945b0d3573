#!/usr/bin/env python3
"""hk_request.py [--socket PATH] [--timeout S] JSON...

Sends each JSON request (one object per argument; "v":1 is added when
missing) to hostkeeperd over its socket, one frame each on one connection,
and prints each reply on a line of its own. The socket: --socket, else
$HOSTKEEPER_SOCKET, else /run/user/UID/hostkeeper/socket when that directory
is the user's (0700, not a link), else $XDG_RUNTIME_DIR/hostkeeper/socket,
as proto/socket_path.hpp resolves it. For tests that
need a reply's exact fields (error codes, migrate's lists), which the command
line tools turn into text. Exit status 0 when every reply arrived (ok or not),
2 on a transport failure.
"""
import argparse
import json
import os
import socket
import stat
import struct
import sys


def recv_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the daemon closed the connection")
        data += chunk
    return data


def default_socket():
    own = "/run/user/%d" % os.geteuid()
    try:
        st = os.lstat(own)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and st.st_mode & 0o077 == 0:
            return os.path.join(own, "hostkeeper", "socket")
    except OSError:
        pass
    return os.path.join(os.environ["XDG_RUNTIME_DIR"], "hostkeeper", "socket")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--socket")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("requests", nargs="+")
    args = parser.parse_args()
    path = args.socket or os.environ.get("HOSTKEEPER_SOCKET") or default_socket()
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(args.timeout)
        sock.connect(path)
        for text in args.requests:
            request = json.loads(text)
            request.setdefault("v", 1)
            payload = json.dumps(request, separators=(",", ":")).encode()
            sock.sendall(struct.pack(">I", len(payload)) + payload)
            (length,) = struct.unpack(">I", recv_exact(sock, 4))
            print(recv_exact(sock, length).decode())
    except (OSError, ConnectionError) as error:
        print(f"hk_request: {path}: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
