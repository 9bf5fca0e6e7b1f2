#!/usr/bin/env python3
"""trace_step.py: where a decode step's time goes, from the kernel timeline that
`cuda_ops decode-profile` writes with DECODE_PROFILE_TRACE=FILE (tests/kernels/cuda_ops_trace.h:
a line "# measured T0 T1 STEPS", then start,end,name,grid,block,cluster a kernel, CUPTI ns).

With programmatic dependent launch a kernel starts while the one before it runs, so its duration
says little. What a kernel adds to the step is its end minus the previous kernel's end ("adds"):
the adds of a step's kernels sum to the step's span. Printed: the steps' span; per kernel (name,
grid, block) its launches a step, mean duration, mean lead (previous end minus its start: how long
it was resident before the kernel it waits for ended) and mean adds, with their sum a step; the
step cut into layers at the kernel that adds the most among those launched more than once a step
(the MLP kernel), each kind of layer with its kernels' mean adds and lead; and some kernels from
the middle of a step, in order.

usage: trace_step.py FILE[.gz] [LAYER_KERNELS]   (LAYER_KERNELS: how many to list, default 24)
A file that cannot be read, has no "# measured" line (the run did not finish) or a line that is
not a kernel record: a message naming the file (and line), exit status 2.
"""
import collections
import gzip
import re
import sys


def fail(msg):
    print(f"trace_step: {msg}", file=sys.stderr)
    sys.exit(2)


def short(name):
    m = re.match(r"_Z(\d+)(\w+)", name)
    base = m.group(2)[: int(m.group(1))] if m else name.split("(")[0]
    if m and ("mlp_kernel" in base or base.startswith("matvec")):
        tail = m.group(2)[int(m.group(1)):]
        args = re.findall(r"Li(\d+)E|Lb(\d)E", tail)
        base += "<" + ",".join(a or b for a, b in args) + ">"
    return base


def layers(keyed, table, steps, per):
    """The step cut into layers: at each launch of the kernel that adds the most among those
    launched more than once a step (the MLP kernel), up to the next. Pieces of the same kernel
    sequence are one kind; per kind, each position's mean adds and lead."""
    many = [k for k, t in table.items() if t[0] >= 2 * steps]
    if not many:
        return
    anchor = max(many, key=lambda k: table[k][3])
    kinds = collections.defaultdict(list)  # kernel sequence -> its pieces' (adds, lead) lists
    for s in range(steps):
        step = keyed[s * per:(s + 1) * per]
        cuts = [i for i, k in enumerate(step) if k[0] == anchor] + [per]
        for a, b in zip(cuts, cuts[1:]):
            piece = step[a:b]
            kinds[tuple(k[0] for k in piece)].append(piece)
    print(f"\nlayers, from each {anchor.split()[0]} to the next (us; kinds seen more than once a step):")
    for seq, pieces in sorted(kinds.items(), key=lambda kv: -len(kv[1])):
        if len(pieces) < 2 * steps:
            continue
        n = len(pieces)
        total = sum(sum(k[1] for k in p) for p in pieces) / n
        print(f"  {n / steps:.0f} a step, {total:.2f} us each:")
        for i, key in enumerate(seq):
            adds = sum(p[i][1] for p in pieces) / n
            lead = sum(p[i][2] for p in pieces) / n
            print(f"    {i:3d} {key[:52]:52} adds {adds:7.2f}  lead {lead:7.2f}")


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    path = sys.argv[1]
    show = int(sys.argv[2]) if len(sys.argv) > 2 else 24
    recs, window = [], None
    try:
        f = gzip.open(path, "rt") if path.endswith(".gz") else open(path)
        with f:
            for n, line in enumerate(f, 1):
                if line.startswith("# measured"):
                    _, _, t0, t1, steps = line.split()
                    window = (int(t0), int(t1), int(steps))
                    continue
                parts = line.rstrip("\n").split(",")
                # start,end,name,grid,block,cluster (a C++ name holds no comma: it is mangled)
                if len(parts) != 6 or not (parts[0].isdigit() and parts[1].isdigit()):
                    fail(f"{path}:{n}: not a kernel record (start,end,name,grid,block,cluster)")
                start, end = int(parts[0]), int(parts[1])
                recs.append((start, end, short(parts[2]), int(parts[3]), int(parts[4])))
    except (OSError, EOFError, ValueError, UnicodeDecodeError) as e:
        fail(f"{path}: {e.strerror if isinstance(e, OSError) and e.strerror else e}")
    if not window:
        fail(f"{path}: no '# measured' line: the run did not finish")
    t0, t1, steps = window
    # the measured steps' kernels, in launch order (a kernel starts after the one before it)
    recs = sorted(r for r in recs if r[0] >= t0 and r[1] <= t1)
    per = len(recs) // steps
    if per == 0:
        fail(f"{path}: no kernels in the measured window")
    if len(recs) % steps:
        print(f"note: {len(recs)} kernels for {steps} steps: the last {len(recs) % steps} left out")
    recs = recs[: per * steps]
    first = recs[0][2]
    print(f"{path}: {steps} steps, {per} kernels a step (the first: {first})")
    spans, table = [], collections.defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    host_gaps, keyed = [], []  # keyed: (key, adds, lead) of every kernel, in order
    for s in range(steps):
        step = recs[s * per:(s + 1) * per]
        prev_end = recs[s * per - 1][1] if s else None
        spans.append((step[-1][1] - step[0][0]) / 1e3)
        for i, (start, end, name, grid, block) in enumerate(step):
            if prev_end is None:
                prev_end = start
            key = f"{name} g{grid} b{block}"
            if i == 0:
                host_gaps.append((start - prev_end) / 1e3)
                adds, lead = (end - start) / 1e3, 0.0
            else:
                adds, lead = (end - prev_end) / 1e3, (prev_end - start) / 1e3
            t = table[key]
            t[0] += 1
            t[1] += (end - start) / 1e3
            t[2] += lead
            t[3] += adds
            keyed.append((key, adds, lead))
            prev_end = end
    span = sum(spans) / steps
    print(f"step span (first start to last end): {span:.1f} us mean, "
          f"{min(spans):.1f} - {max(spans):.1f}; between steps (host): "
          f"{sum(host_gaps[1:]) / max(1, steps - 1):.1f} us")
    print(f"{'kernel (grid, block)':58} {'a step':>6} {'dur us':>8} {'lead us':>8} "
          f"{'adds us':>8} {'a step us':>10} {'share':>6}")
    for key, (n, dur, lead, adds) in sorted(table.items(), key=lambda kv: -kv[1][3]):
        print(f"{key[:58]:58} {n / steps:6.1f} {dur / n:8.2f} {lead / n:8.2f} {adds / n:8.2f} "
              f"{adds / steps:10.1f} {100 * adds / steps / span:5.1f}%")
    layers(keyed, table, steps, per)
    mid = steps // 2
    step = recs[mid * per:(mid + 1) * per]
    i0 = per // 2
    i1 = min(per, i0 + show)
    print(f"\nkernels {i0} .. {i1 - 1} of step {mid} (us from the step's first start):")
    for i in range(i0, i1):
        start, end, name, grid, block = step[i]
        pe = step[i - 1][1]
        print(f"  {i:4d} {name[:40]:40} g{grid:<6} b{block:<5} start {(start - step[0][0]) / 1e3:8.1f}"
              f"  dur {(end - start) / 1e3:6.2f}  lead {(pe - start) / 1e3:6.2f}  adds {(end - pe) / 1e3:6.2f}")


if __name__ == "__main__":
    main()
