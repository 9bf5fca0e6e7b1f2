#!/usr/bin/env bash
# check_includes.sh: fails when two source files of engine/, kernels/, tuner/ or common/ depend
# on each other through their headers.
#
# The graph: source file A depends on source file B when A includes, directly or through other
# headers, a header that B implements and A does not. B implements a header H when
#   - B's name is H's name (decoder.c: decoder.h), or starts with it and '_' (model_load.c,
#     model_derive.c: model.h; kernels/backend_cuda.c: engine/backend.h, whose
#     backend_cuda_new it defines), or
#   - B has no header of its own name, defines no main(), and H is the first header B includes
#     (tensor.c: model.h; forward.c: decoder.h).
# Files that implement the same header are one module and never depend on each other. A pair A,
# B that depend on each other is printed with the headers that make each edge, and the script
# exits 1; otherwise it prints one line and exits 0.
#
#   scripts/check_includes.sh [ROOT]     (default: the repository this script is in)
set -euo pipefail
root=${1:-"$(cd "$(dirname "$0")/.." && pwd)"}
exec python3 - "$root" <<'PY'
import os, re, sys

root = sys.argv[1]
DIRS = ["engine", "kernels", "tuner", "common"]
SOURCE = (".c", ".cu")
HEADER = (".h", ".cuh")
include_re = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
main_re = re.compile(r'^\s*int\s+main\s*\(', re.M)

files = {}  # path relative to root -> text
for d in DIRS:
    top = os.path.join(root, d)
    for dirpath, _, names in os.walk(top):
        for n in sorted(names):
            if n.endswith(SOURCE + HEADER):
                p = os.path.relpath(os.path.join(dirpath, n), root)
                with open(os.path.join(root, p), encoding="utf-8", errors="replace") as f:
                    files[p] = f.read()

by_name = {}
for p in files:
    by_name.setdefault(os.path.basename(p), []).append(p)

def resolve(src, inc):
    """The scanned file an #include "inc" in src names (its own folder first), or None."""
    here = os.path.normpath(os.path.join(os.path.dirname(src), inc))
    if here in files:
        return here
    cands = by_name.get(os.path.basename(inc), [])
    return cands[0] if len(cands) == 1 else None

includes = {p: [q for q in (resolve(p, i) for i in include_re.findall(t)) if q]
            for p, t in files.items()}

def stem(p):
    return os.path.splitext(os.path.basename(p))[0]

sources = [p for p in files if p.endswith(SOURCE)]
headers = [p for p in files if p.endswith(HEADER)]
header_stems = {stem(h) for h in headers}

owners = {h: set() for h in headers}
for h in headers:
    for s in sources:
        if stem(s) == stem(h) or stem(s).startswith(stem(h) + "_"):
            owners[h].add(s)
for s in sources:
    if stem(s) in header_stems or main_re.search(files[s]) or not includes[s]:
        continue
    first = includes[s][0]
    if first.endswith(HEADER):
        owners[first].add(s)
owned = {s: {h for h in headers if s in owners[h]} for s in sources}

def reach(s):
    """Every header s includes, directly or through headers, with the chain to it."""
    seen, todo = {}, [(h, (h,)) for h in includes[s] if h.endswith(HEADER)]
    while todo:
        h, chain = todo.pop()
        if h in seen:
            continue
        seen[h] = chain
        todo += [(g, chain + (g,)) for g in includes[h] if g.endswith(HEADER) and g not in seen]
    return seen

deps = {}  # (a, b) -> chain of headers from a to one b implements
for a in sources:
    for h, chain in reach(a).items():
        if h in owned[a]:
            continue
        for b in owners[h]:
            if b != a and not (owned[a] & owned[b]):
                deps.setdefault((a, b), chain)

cycles = sorted({tuple(sorted(e)) for e in deps if (e[1], e[0]) in deps})
for a, b in cycles:
    print(f"check_includes: {a} and {b} depend on each other:", file=sys.stderr)
    for x, y in ((a, b), (b, a)):
        print(f"  {x} -> {' -> '.join(deps[(x, y)])} (implemented by {y})", file=sys.stderr)
if cycles:
    sys.exit(1)
print(f"check_includes: {len(sources)} source files, {len(deps)} dependencies, no two files "
      "depend on each other")
PY
