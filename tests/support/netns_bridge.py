#!/usr/bin/env python3
"""netns_bridge.py outside|inside DIR PORT... : loopback ports of one network
namespace reachable from another, with no address but loopback.

  outside DIR PORT...  (in the namespace where the servers listen) for each
                       PORT, listens on the Unix socket DIR/PORT.sock and
                       connects each connection it accepts to 127.0.0.1:PORT,
                       with a line on standard error for each;
  inside DIR PORT...   (in another namespace: a runner's own) for each PORT,
                       listens on 127.0.0.1:PORT and connects each connection
                       to DIR/PORT.sock.

Unix sockets in the file system are reachable from every network namespace,
so a client inside reaches 127.0.0.1:PORT as if it ran outside (the same
URLs, the same certificates). Where the server outside does not answer (it
is stopped), the outside end closes at once and the inside end resets the
client's connection: the client sees a failed connection, not a hang.
`inside` writes DIR/inside-PID.ready once it listens on every port.
"""
import asyncio
import os
import socket
import struct
import sys


async def pipe(reader, writer):
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        try:
            if writer.can_write_eof():
                writer.write_eof()
        except (ConnectionError, OSError):
            writer.close()


async def join(client_reader, client_writer, connect):
    try:
        server_reader, server_writer = await connect()
    except OSError:
        # Reset, as a stopped server's port would.
        sock = client_writer.get_extra_info("socket")
        if sock is not None and sock.family == socket.AF_INET:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client_writer.close()
        return
    await asyncio.gather(pipe(client_reader, server_writer), pipe(server_reader, client_writer))
    for writer in (client_writer, server_writer):
        writer.close()


async def main(mode, directory, ports):
    servers = []
    for port in ports:
        path = os.path.join(directory, "%d.sock" % port)
        if mode == "outside":
            if os.path.exists(path):
                os.unlink(path)

            def connect(port=port):
                print("bridged a connection to port %d" % port, file=sys.stderr, flush=True)
                return asyncio.open_connection("127.0.0.1", port)

            servers.append(await asyncio.start_unix_server(
                lambda r, w, c=connect: join(r, w, c), path=path))
        else:

            def connect(path=path):
                return asyncio.open_unix_connection(path)

            servers.append(await asyncio.start_server(
                lambda r, w, c=connect: join(r, w, c), "127.0.0.1", port))
    if mode == "inside":
        with open(os.path.join(directory, "inside-%d.ready" % os.getpid()), "w", encoding="ascii"):
            pass
    await asyncio.gather(*(server.serve_forever() for server in servers))


if __name__ == "__main__":
    if len(sys.argv) < 4 or sys.argv[1] not in ("outside", "inside"):
        sys.exit("usage: netns_bridge.py outside|inside DIR PORT...")
    try:
        asyncio.run(main(sys.argv[1], sys.argv[2], [int(p) for p in sys.argv[3:]]))
    except KeyboardInterrupt:
        pass
