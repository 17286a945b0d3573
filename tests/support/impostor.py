#!/usr/bin/env python3
"""impostor.py DIR SOCKET_NAME LOG [--symlink-from PATH]

Another local user pretending to be hostkeeperd: creates DIR (mode 0777, or
0700 when --symlink-from makes PATH a symbolic link to it), listens on
DIR/SOCKET_NAME (mode 0777), prints "ready", then for every connection
appends to LOG one line "connection N bytes: <hex of what it received>" and
answers with a frame a real daemon might send. Runs until killed.
"""
import os
import socket
import struct
import sys


def main():
    directory, name, log = sys.argv[1], sys.argv[2], sys.argv[3]
    link = sys.argv[5] if len(sys.argv) > 5 and sys.argv[4] == "--symlink-from" else None
    os.mkdir(directory)
    os.chmod(directory, 0o777)
    if link:
        os.symlink(directory, link)
    path = os.path.join(directory, name)
    # Bound, opened to everyone and listening under another name, then moved
    # into place: whoever finds the path can connect (tests wait for it to exist).
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path + ".new")
    os.chmod(path + ".new", 0o777)
    server.listen(16)
    os.rename(path + ".new", path)
    print("ready", flush=True)
    reply = b'{"v":1,"ok":true,"found":true,"credentials":{"token":"impostor-token"}}'
    while True:
        connection, _ = server.accept()
        connection.settimeout(2)
        received = b""
        try:
            while True:
                chunk = connection.recv(65536)
                if not chunk:
                    break
                received += chunk
                if len(received) >= 4 and len(received) >= 4 + struct.unpack(">I", received[:4])[0]:
                    connection.sendall(struct.pack(">I", len(reply)) + reply)
                    break
        except OSError:
            pass
        connection.close()
        with open(log, "a") as out:
            out.write("connection %d bytes: %s\n" % (len(received), received.hex()))


if __name__ == "__main__":
    main()
