#!/usr/bin/env python3
"""The translation units clang-tidy checks, one per line, from a build tree's
compile_commands.json: every unit that compiles a .cpp of proto/, daemon/ or
helper/.

In a unity tree (HOSTKEEPER_UNITY=ON) a unit is a CMake batch that includes
several .cpp files; a batch is listed when it includes such a file that no
batch listed before it does, so each file is checked once, with its
neighbours parsed together with it. A .cpp compiled on its own is listed as
itself.

Usage: tidy_units.py BUILD_DIR SOURCE_DIR
"""
import json
import os
import re
import sys

CHECKED = ("proto/", "daemon/", "helper/")
INCLUDE = re.compile(r'^#include "([^"]+)"', re.MULTILINE)


def checked(path, source_dir):
    rel = os.path.relpath(os.path.realpath(path), source_dir)
    return rel.endswith(".cpp") and rel.startswith(CHECKED)


def main():
    build, source_dir = sys.argv[1], os.path.realpath(sys.argv[2])
    with open(os.path.join(build, "compile_commands.json"), encoding="utf-8") as f:
        commands = json.load(f)
    covered = set()
    units = []
    for command in commands:
        unit = os.path.join(command.get("directory", ""), command["file"])
        if "/Unity/unity_" in unit:
            with open(unit, encoding="utf-8") as f:
                sources = [os.path.realpath(s) for s in INCLUDE.findall(f.read())]
        else:
            sources = [os.path.realpath(unit)]
        fresh = [s for s in sources if checked(s, source_dir) and s not in covered]
        if fresh:
            covered.update(sources)
            units.append(unit)
    for unit in units:
        print(unit)


if __name__ == "__main__":
    main()
