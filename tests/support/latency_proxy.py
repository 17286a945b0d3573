#!/usr/bin/env python3
"""A loopback TCP proxy that makes a connection cost what it costs on a WAN
(stdlib only): this kernel has no netem, and a server that sleeps before
each answer cannot show what handshakes and round trips cost.

  latency_proxy.py --port-file FILE --upstream-port-file FILE2 \\
                   --rtt-ms 40 [--rate-mbit 100] [--log FILE3]

It listens on 127.0.0.1 (an ephemeral port, written to --port-file once it
accepts connections) and forwards each connection's bytes, both ways, to
127.0.0.1:PORT, PORT read from --upstream-port-file when the first
connection arrives (so the server it fronts can be started after it, told
the proxy's address as its own public one). TLS passes through untouched.

The link it models, per direction:
  - propagation: every byte arrives half a round trip after it was sent;
  - the TCP handshake: a new connection's first bytes from the client reach
    the server one and a half round trips after connect() (SYN, SYN-ACK,
    then the data), as they would on the wire;
  - bandwidth (--rate-mbit, default unlimited): one link per direction,
    shared by every connection (or, with --per-connection, one per
    connection, as if each client had a link of its own), each chunk
    serialised behind the ones before it;
  - flow control: at most --window-kib (default 4096) of a direction's bytes
    in flight per connection; past that the proxy stops reading, so the
    sender's TCP backs off as it would against a full window.

--log FILE appends a JSON line when a connection opens ({"event": "open",
"time": ...}) and one when it closes ({"event": "close", "opened": ...,
"closed": ..., "bytes_up": ..., "bytes_down": ...}; times in seconds since
the epoch): counting "open" lines gives the connections clients opened.
SIGTERM and SIGINT stop it.
"""

import argparse
import asyncio
import json
import os
import signal
import sys
import time

CHUNK = 64 * 1024


class Link:
    """One direction of the modelled network: its bandwidth and delay."""

    def __init__(self, one_way, bytes_per_second):
        self.one_way = one_way
        self.rate = bytes_per_second
        self.free_at = 0.0

    def arrival(self, now, size):
        """When SIZE bytes sent at NOW arrive at the far end."""
        start = max(now, self.free_at)
        done = start + (size / self.rate if self.rate else 0.0)
        self.free_at = done
        return done + self.one_way


class Proxy:
    def __init__(self, args):
        self.rtt = args.rtt_ms / 1000.0
        self.rate = args.rate_mbit * 1e6 / 8 if args.rate_mbit else 0.0
        self.per_connection = args.per_connection
        self.up = Link(self.rtt / 2, self.rate)
        self.down = Link(self.rtt / 2, self.rate)
        self.window = max(args.window_kib * 1024 // CHUNK, 1)
        self.upstream_port_file = args.upstream_port_file
        self.upstream_port = None
        self.log = open(args.log, "a", encoding="utf-8") if args.log else None

    def upstream(self):
        if self.upstream_port is None:
            with open(self.upstream_port_file, encoding="ascii") as f:
                self.upstream_port = int(f.read().strip())
        return self.upstream_port

    async def handle(self, client_reader, client_writer):
        opened = time.time()
        self.record({"event": "open", "time": opened})
        loop = asyncio.get_running_loop()
        # The client's data leaves after the SYN/SYN-ACK round trip and then
        # takes half a round trip more.
        earliest_up = loop.time() + 1.5 * self.rtt
        counts = {"up": 0, "down": 0}
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", self.upstream())
        except (OSError, ValueError):
            client_writer.close()
            return
        up, down = self.up, self.down
        if self.per_connection:
            up, down = Link(self.rtt / 2, self.rate), Link(self.rtt / 2, self.rate)
        pumps = [
            asyncio.create_task(self.pump(client_reader, server_writer, up, earliest_up, counts, "up")),
            asyncio.create_task(self.pump(server_reader, client_writer, down, 0.0, counts, "down")),
        ]
        # A direction that ends cleanly (EOF) leaves the other running (a
        # half-close); one that fails (a reset) closes both sockets.
        pending = set(pumps)
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            if any(task.exception() for task in done):
                for writer in (client_writer, server_writer):
                    writer.close()
        for writer in (client_writer, server_writer):
            writer.close()
        self.record({"event": "close", "opened": opened, "closed": time.time(),
                     "bytes_up": counts["up"], "bytes_down": counts["down"]})

    def record(self, line):
        if self.log:
            self.log.write(json.dumps(line) + "\n")
            self.log.flush()

    async def pump(self, reader, writer, link, earliest, counts, name):
        """Reads one direction and delivers each chunk when the link says."""
        loop = asyncio.get_running_loop()
        queue = asyncio.Queue(self.window)

        async def deliver():
            while True:
                due, data = await queue.get()
                delay = due - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                if data is None:
                    if writer.can_write_eof():
                        writer.write_eof()
                    return
                writer.write(data)
                await writer.drain()

        sender = asyncio.create_task(deliver())
        try:
            while True:
                data = await reader.read(CHUNK)
                now = loop.time()
                if not data:
                    await queue.put((max(now + link.one_way, earliest), None))
                    break
                counts[name] += len(data)
                await queue.put((max(link.arrival(now, len(data)), earliest), data))
            await sender
        except (OSError, asyncio.IncompleteReadError):
            sender.cancel()
            # A reset on one side resets the other: both writers close.
            raise


async def serve(args):
    proxy = Proxy(args)
    server = await asyncio.start_server(proxy.handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    tmp = args.port_file + ".tmp"
    with open(tmp, "w", encoding="ascii") as f:
        f.write("%d\n" % port)
    os.replace(tmp, args.port_file)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port-file", required=True, help="where to write the proxy's port")
    parser.add_argument("--upstream-port-file", required=True, help="the port of the server on 127.0.0.1")
    parser.add_argument("--rtt-ms", type=float, required=True, help="the round trip to model")
    parser.add_argument("--rate-mbit", type=float, default=0, help="each direction's bandwidth (0: unlimited)")
    parser.add_argument("--per-connection", action="store_true", help="a link of its own for each connection")
    parser.add_argument("--window-kib", type=int, default=4096, help="bytes in flight per connection and direction")
    parser.add_argument("--log", help="one JSON line per closed connection")
    args = parser.parse_args()
    asyncio.run(serve(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
