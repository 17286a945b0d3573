#!/usr/bin/env python3
"""Starts hostkeeper-portd as PID 1 would through hostkeeper-port.socket.

    port_launcher.py --socket PATH [--port N] [--uid U] [--gid G] PORTD [ARGS...]

Run as root: binds 127.0.0.1:N and [::1]:N (IPV6_V6ONLY; skipped where the
machine has no ::1) as TCP listeners with a backlog of 4096 and a Unix
listener at PATH (mode 0666), puts them at descriptors 3, 4 (and 5) with
LISTEN_FDS, LISTEN_PID and LISTEN_FDNAMES set as systemd sets them, drops to
--uid/--gid (default 65534, nobody) without supplementary groups, and execs
PORTD in this same process (so LISTEN_PID is the pid PORTD runs as).
"""
import argparse
import os
import resource
import socket
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--socket', required=True)
    parser.add_argument('--port', type=int, default=585)
    parser.add_argument('--uid', type=int, default=65534)
    parser.add_argument('--gid', type=int, default=65534)
    parser.add_argument('--no-ipv6', action='store_true', help='only the IPv4 listener')
    parser.add_argument('portd')
    parser.add_argument('args', nargs=argparse.REMAINDER)
    a = parser.parse_args()
    if os.geteuid() != 0:
        print('port_launcher.py: must run as root (it binds a privileged port)', file=sys.stderr)
        return 2

    sockets = []
    names = []
    v4 = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    v4.bind(('127.0.0.1', a.port))
    v4.listen(4096)
    sockets.append(v4)
    names.append('hostkeeper-port.socket')
    if not a.no_ipv6 and socket.has_ipv6:
        try:
            v6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
            v6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            v6.bind(('::1', a.port))
            v6.listen(4096)
            sockets.append(v6)
            names.append('hostkeeper-port-ipv6.socket')
        except OSError as e:
            print(f'port_launcher.py: no [::1]:{a.port} ({e}); IPv4 only', file=sys.stderr)
    if os.path.lexists(a.socket):
        os.unlink(a.socket)
    link = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    link.bind(a.socket)
    os.chmod(a.socket, 0o666)
    link.listen(4096)
    # systemd's order: the units' ListenStream= lines; here the Unix socket last.
    sockets.append(link)
    names.append('hostkeeper-port.socket')

    # Descriptors 3, 4, 5 in that order, inherited; nothing else leaks in.
    fds = [s.detach() for s in sockets]
    for i, fd in enumerate(fds):
        target = 3 + i
        if fd != target:
            os.dup2(fd, target, inheritable=True)
        else:
            os.set_inheritable(fd, True)
    # Whatever else this process inherited stays out of portd.
    os.closerange(3 + len(fds), 4096)

    # Room for the service's bounds (hostkeeper-port.service: LimitNOFILE=).
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 16384 if hard == resource.RLIM_INFINITY else min(16384, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want), max(hard, want)))

    os.setgroups([])
    os.setgid(a.gid)
    os.setuid(a.uid)

    env = {k: v for k, v in os.environ.items() if not k.startswith('LISTEN_')}
    env['LISTEN_FDS'] = str(len(fds))
    env['LISTEN_PID'] = str(os.getpid())  # execve keeps the pid
    env['LISTEN_FDNAMES'] = ':'.join(names)
    os.execve(a.portd, [a.portd] + a.args, env)


if __name__ == '__main__':
    sys.exit(main())
