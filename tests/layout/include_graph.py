#!/usr/bin/env python3
"""The include graph of hostkeeper's own sources, and the rules it must keep.

    tests/layout/include_graph.py [--check] [ROOT]

Prints the number of files, include edges between our files, the depth (the
longest chain of includes), and which folder includes which. With --check,
exits 1 when a folder includes one it may not (see ALLOWED), a file includes
one that includes it back, or the dependency diagram of docs/ARCHITECTURE.md
(the fenced block after its "## Dependencies" heading, one line per folder:
"daemon/registry -> daemon/archives, daemon/cache, proto") differs from the
folder edges of the real include graph.
"""
import sys
from collections import defaultdict
from pathlib import Path
import re

# Which folders each folder may include (besides itself). Dependencies point
# one way: proto at the bottom, the helper's and the daemon's folders above
# it, never each other.
ALLOWED = {
    'proto': set(),
    'daemon/async': {'proto'},
    'daemon/cache': {'proto', 'daemon/async'},
    'daemon/http': {'proto', 'daemon/async'},
    'daemon/fleet': {'proto', 'daemon/async', 'daemon/http', 'daemon/archives'},
    'daemon/archives': {'proto', 'daemon/async', 'daemon/http'},
    'daemon/credentials': {'proto', 'daemon/async', 'daemon/cache'},
    'daemon/libsecret': {'proto', 'daemon/async', 'daemon/credentials'},
    'daemon/pass': {'proto', 'daemon/async', 'daemon/credentials'},
    'daemon/notify': {'proto', 'daemon/async'},
    'daemon/backends': {'proto', 'daemon/async', 'daemon/cache', 'daemon/credentials', 'daemon/libsecret',
                        'daemon/pass'},
    'daemon/upstream': {'proto', 'daemon/async', 'daemon/cache', 'daemon/http', 'daemon/credentials'},
    'daemon/discovery': {'proto', 'daemon/async', 'daemon/cache', 'daemon/http', 'daemon/credentials',
                         'daemon/upstream'},
    'daemon/registry': {'proto', 'daemon/async', 'daemon/cache', 'daemon/http', 'daemon/archives',
                        'daemon/credentials', 'daemon/upstream', 'daemon/discovery'},
    'daemon/registry_cache': {'proto', 'daemon/async', 'daemon/cache', 'daemon/http', 'daemon/archives',
                              'daemon/credentials', 'daemon/upstream', 'daemon/discovery',
                              'daemon/registry', 'daemon/server'},
    'daemon/server': {'proto', 'daemon/async', 'daemon/http'},
    'daemon/portd': {'proto'},
    'daemon/handlers': {'proto', 'daemon/async', 'daemon/cache', 'daemon/http', 'daemon/archives',
                        'daemon/credentials', 'daemon/upstream', 'daemon/discovery', 'daemon/registry',
                        'daemon/registry_cache', 'daemon/server', 'daemon/backends'},
    'daemon/app': {'proto', 'daemon/async', 'daemon/cache', 'daemon/http', 'daemon/archives',
                   'daemon/credentials', 'daemon/libsecret', 'daemon/upstream', 'daemon/discovery',
                   'daemon/registry', 'daemon/registry_cache', 'daemon/server', 'daemon/handlers',
                   'daemon/pass', 'daemon/backends', 'daemon/notify', 'daemon/fleet'},
    'helper/client': {'proto'},
    'helper/credentials_helper': {'proto', 'helper/client'},
    'helper/docker_credential_helper': {'proto', 'helper/client'},
    'helper/git_credential_helper': {'proto', 'helper/client'},
    'helper/terraform_config': {'proto'},
    'helper/cli': {'proto', 'helper/client', 'helper/terraform_config'},
}
SOURCE_DIRS = ('proto', 'daemon', 'helper')
# Where an include may be found, in order: the repository, where includes are
# rooted, then per-target include folders, so that one found there is still
# an edge of the graph (and fails the rules) rather than going unseen.
ROOTS = ('', 'proto/include', 'daemon/src', 'helper/src')
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
DIAGRAM_DOC = Path('docs/ARCHITECTURE.md')
DIAGRAM_HEADING = '## Dependencies'


def folder_of(rel):
    parts = Path(rel).parts
    if parts[0] == 'proto':
        return 'proto'
    if len(parts) >= 3 and parts[1] != 'src':
        return '/'.join(parts[:2])
    return parts[0]


def graph(root):
    files = sorted(p for d in SOURCE_DIRS for p in (root / d).rglob('*')
                   if p.suffix in ('.hpp', '.cpp', '.h') and p.is_file())
    rel = {p: str(p.relative_to(root)) for p in files}
    edges = defaultdict(set)
    for p in files:
        for inc in INCLUDE.findall(p.read_text(errors='replace')):
            candidates = [p.parent / inc] + [root / r / inc for r in ROOTS]
            for c in candidates:
                if c.is_file() and c in rel:
                    edges[rel[p]].add(rel[c])
                    break
    return [rel[p] for p in files], edges


def depth(nodes, edges):
    memo = {}

    def d(n, stack):
        if n in memo:
            return memo[n]
        if n in stack:
            raise RuntimeError('include cycle through ' + n)
        stack.add(n)
        memo[n] = 1 + max((d(m, stack) for m in edges.get(n, ())), default=0)
        stack.discard(n)
        return memo[n]
    return max((d(n, set()) for n in nodes), default=0)


def diagram_edges(root):
    """The folder edges the diagram in docs/ARCHITECTURE.md draws, or an error."""
    path = root / DIAGRAM_DOC
    if not path.is_file():
        return None, f'{DIAGRAM_DOC} is missing'
    lines = path.read_text().split('\n')
    try:
        at = lines.index(DIAGRAM_HEADING)
        begin = next(i for i in range(at + 1, len(lines)) if lines[i].startswith('```'))
        end = next(i for i in range(begin + 1, len(lines)) if lines[i].startswith('```'))
    except (ValueError, StopIteration):
        return None, f'{DIAGRAM_DOC} has no fenced block after a "{DIAGRAM_HEADING}" line'
    edges = defaultdict(set)
    for line in lines[begin + 1:end]:
        if '->' not in line:
            continue
        source, targets = (part.strip() for part in line.split('->', 1))
        edges[source] |= {t.strip() for t in targets.split(',') if t.strip()}
    return edges, None


def diagram_problems(root, folder_edges):
    drawn, error = diagram_edges(root)
    if error:
        return [error]
    real = {(a, b) for a, bs in folder_edges.items() for b in bs}
    shown = {(a, b) for a, bs in drawn.items() for b in bs}
    return ([f'{DIAGRAM_DOC} lacks the edge {a} -> {b}' for a, b in sorted(real - shown)] +
            [f'{DIAGRAM_DOC} draws {a} -> {b}, which no include makes' for a, b in sorted(shown - real)])


def main(argv):
    check = '--check' in argv
    args = [a for a in argv if a != '--check']
    root = Path(args[0] if args else Path(__file__).resolve().parents[2]).resolve()
    nodes, edges = graph(root)
    n_edges = sum(len(v) for v in edges.values())
    try:
        floors = depth(nodes, edges)
    except RuntimeError as e:
        print(e)
        return 1
    print(f'files {len(nodes)}  include edges {n_edges}  depth {floors}')
    folder_edges = defaultdict(set)
    problems = []
    for a, targets in sorted(edges.items()):
        fa = folder_of(a)
        for b in sorted(targets):
            fb = folder_of(b)
            if fa != fb:
                folder_edges[fa].add(fb)
                if check and fb not in ALLOWED.get(fa, set()):
                    problems.append(f'{a} includes {b}: {fa} may not depend on {fb}')
    for fa in sorted(folder_edges):
        print(f'  {fa} -> {", ".join(sorted(folder_edges[fa]))}')
    if check:
        unknown = sorted({folder_of(n) for n in nodes} - set(ALLOWED))
        problems += [f'folder {u} is not in ALLOWED (tests/layout/include_graph.py)' for u in unknown]
        problems += diagram_problems(root, folder_edges)
        for p in problems:
            print('layout:', p)
        return 1 if problems else 0
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
