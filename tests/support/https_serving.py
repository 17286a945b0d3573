"""What the test HTTPS servers of https_registry.py share (stdlib only).

JsonHandler: a request handler that does its TLS handshake in its own
thread, answers with JSON (or any bytes) and appends one JSON line per
answer to a log file. tls_server() listens on 127.0.0.1 with TLS, and
serve() runs a server until SIGTERM or SIGINT, publishing its port once it
accepts connections.
"""

import http.server
import json
import os
import signal
import socket
import ssl
import sys
import threading
import urllib.parse

STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}


class JsonHandler(http.server.BaseHTTPRequestHandler):
    # Set by the server's main(): the open log file appended to by record().
    log_file = None
    log_lock = threading.Lock()

    protocol_version = "HTTP/1.1"

    def setup(self):
        # The TLS handshake happens here, in this connection's own thread, so
        # a stalled client cannot hold up the accept loop.
        self.request.do_handshake()
        # As real servers (nginx's tcp_nodelay, Go's net/http) do: a response
        # written in two writes (head, then body) must not wait for the
        # client's delayed ACK (Nagle), which stalls libcurl ~40 ms a request.
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().setup()

    def reply_json(self, status, body, headers=None):
        data = b"" if body is None else json.dumps(body).encode() + b"\n"
        self.reply(status, data, "application/json", headers)

    def reply(self, status, data, content_type, headers=None):
        self.record(status)
        self.send_response(status)
        if status != 204:
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if status != 204:
            self.wfile.write(data)

    def record(self, status):
        split = urllib.parse.urlsplit(self.path)
        line = json.dumps({
            "method": self.command,
            "path": split.path,
            "query": split.query,
            "authorization": self.headers.get("Authorization"),
            "status": status,
            "user_agent": self.headers.get("User-Agent"),
        })
        with self.log_lock:
            self.log_file.write(line + "\n")
            self.log_file.flush()

    def log_message(self, format, *args):
        # The JSON log is the record; keep stderr for real problems.
        pass


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A client that hangs up or fails the TLS handshake gets one line on
        # stderr, not a traceback; anything else is a bug worth the traceback.
        error = sys.exc_info()[1]
        if isinstance(error, OSError):  # ssl.SSLError and ConnectionError too
            print("https_registry: %s:%d: %s" % (client_address + (error,)), file=sys.stderr)
        else:
            super().handle_error(request, client_address)


def block_stop_signals():
    """Blocks SIGTERM and SIGINT; call it before any thread starts (threads
    inherit the mask): they can then only end up in serve()'s sigwait()."""
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)


def tls_server(port, handler, cert, key):
    """A Server for handler on 127.0.0.1:port (0: an ephemeral one), TLS with
    cert and key; each connection's handshake is left to handler.setup()."""
    server = Server(("127.0.0.1", port), handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True,
                                        do_handshake_on_connect=False)
    return server


def serve(server, port_file):
    """Serves until a stop signal (blocked by block_stop_signals()) comes,
    writing the port to port_file once it accepts connections."""
    # Requests are served from a thread; the main thread waits for a stop
    # signal (blocked, so it stays pending until sigwait takes it).
    serving = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1})
    serving.start()

    # Publish the port atomically: readers never see a half-written file.
    tmp = port_file + ".tmp"
    with open(tmp, "w", encoding="ascii") as f:
        f.write("%d\n" % server.server_address[1])
    os.replace(tmp, port_file)

    signal.sigwait(STOP_SIGNALS)
    server.shutdown()
    serving.join()
    server.server_close()


class Service:
    """A part of a server answering some paths for a JsonHandler: each of
    get(), post() and delete() answers a request for one of its paths
    (True) or leaves it to the next service (False)."""

    def get(self, handler, path):
        return False

    def post(self, handler, path, body):
        return False

    def delete(self, handler, path):
        return False
