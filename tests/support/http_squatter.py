#!/usr/bin/env python3
"""http_squatter.py PORT LOG READY_FILE

Another local process squatting on the registry cache's loopback port while
hostkeeperd is down: listens on 127.0.0.1:PORT (plain HTTP, as the listener
does), writes READY_FILE once it accepts connections, and for every request
appends to LOG one JSON line {"method", "path", "headers": [[name, value],
...], "body"} with everything it received (headers verbatim, body as text),
then answers 404. Runs until SIGTERM or SIGINT.
"""
import http.server
import json
import os
import signal
import sys
import threading


class Squatter(http.server.BaseHTTPRequestHandler):
    log_file = None
    log_lock = threading.Lock()
    protocol_version = "HTTP/1.1"

    def handle_any(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        line = json.dumps({"method": self.command, "path": self.path,
                           "headers": [[k, v] for k, v in self.headers.items()],
                           "body": body.decode("utf-8", "replace")})
        with self.log_lock:
            self.log_file.write(line + "\n")
            self.log_file.flush()
        data = b'{"errors":["not found"]}\n'
        self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = handle_any

    def log_message(self, format, *args):
        pass


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    port, log, ready = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    stop_signals = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)
    Squatter.log_file = open(log, "a", encoding="utf-8")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Squatter)
    server.daemon_threads = True
    serving = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1})
    serving.start()
    with open(ready + ".tmp", "w", encoding="ascii") as f:
        f.write("ready\n")
    os.replace(ready + ".tmp", ready)
    signal.sigwait(stop_signals)
    server.shutdown()
    serving.join()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
