#!/usr/bin/env python3
"""walk.py PROGRAM TRACE SOURCE_ROOT [--from FILE] [--list]

Reads a function-entry trace written by walk_trace.c (a walk build's
PROGRAM) and prints the walk of one request through the project's files,
twice: over every entry ("all"), and over the steps a reader follows
("named"): entries into named functions, without constructors, destructors
and assignments (a value built, moved or dropped) and without a coroutine's
resumptions (its frame entered again after a co_await). Each line gives

  files    distinct source files (.cpp or .hpp under SOURCE_ROOT) entered
  stays    runs of consecutive entries into one file, in call order
  returns  stays in a file that an earlier stay was in (stays - files)
  folders  distinct folders of those files

Only the thread that entered a function of FILE first (--from: the first
file whose path ends so, default http_listener.cpp, where a request is
read) is walked, from that entry on; entries into code outside SOURCE_ROOT
(libraries, the standard library) are not part of it. --list prints the
stays, one a line.
"""
import argparse
import os
import re
import struct
import subprocess
import sys


def read_trace(path):
    with open(path, "rb") as f:
        data = f.read()
    return [struct.unpack_from("<QQ", data, at) for at in range(0, len(data) - 15, 16)]


def files_of(program, addresses, root):
    """Address -> repository-relative source file (None: not ours)."""
    ordered = sorted(addresses)
    out = subprocess.run(["addr2line", "-f", "-C", "-e", program] + ["%x" % a for a in ordered],
                         check=True, capture_output=True, text=True).stdout.splitlines()
    result = {}
    for address, name, line in zip(ordered, out[0::2], out[1::2]):
        path = line.rsplit(":", 1)[0]
        path = os.path.normpath(path) if path and path != "??" else ""
        rel = os.path.relpath(path, root) if os.path.isabs(path) else path
        ours = rel and not rel.startswith("..") and rel.split(os.sep)[0] in ("daemon", "proto", "helper")
        result[address] = (rel, name) if ours else None
    return result


SPECIAL = re.compile(r"(?:^|::)(~?)(\w+)::(?:~?\2|operator\b)")


def named(name):
    """Whether an entry into `name` is a step a reader follows."""
    head = name.split("(", 1)[0]
    if "::_Z" in name or name.startswith("_Z") or ".Frame." in name:
        return False
    if head.rsplit("::", 1)[-1].startswith(("~", "operator")):
        return False
    parts = re.sub(r"<[^<>]*>", "", head).split("::")
    return not (len(parts) >= 2 and parts[-1] == parts[-2])


def walk(entries, files, thread, keep):
    stays, names = [], []
    for tid, address in entries:
        if tid != thread or files[address] is None or not keep(files[address][1]):
            continue
        path, name = files[address]
        if not stays or stays[-1] != path:
            stays.append(path)
            names.append([])
        names[-1].append(name)
    return stays, names


def report(label, stays, names, listing):
    distinct = list(dict.fromkeys(stays))
    folders = {os.path.dirname(p) for p in distinct}
    if listing:
        for path, entered in zip(stays, names):
            print("  %s: %s" % (path, "; ".join(dict.fromkeys(n.split("(", 1)[0] for n in entered))))
    print("%-6s files %d  stays %d  returns %d  folders %d" %
          (label, len(distinct), len(stays), len(stays) - len(distinct), len(folders)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("program")
    parser.add_argument("trace")
    parser.add_argument("root")
    parser.add_argument("--from", dest="start", default="http_listener.cpp")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()
    entries = read_trace(args.trace)
    if not entries:
        sys.exit("walk.py: the trace is empty (was the request made while recording?)")
    files = files_of(args.program, {address for _, address in entries}, os.path.realpath(args.root))
    first = next((i for i, (_, a) in enumerate(entries) if files[a] and files[a][0].endswith(args.start)),
                 None)
    if first is None:
        sys.exit("walk.py: no function of %s was entered while recording" % args.start)
    thread = entries[first][0]
    report("all", *walk(entries[first:], files, thread, lambda name: True), False)
    report("named", *walk(entries[first:], files, thread, named), args.list)


if __name__ == "__main__":
    main()
