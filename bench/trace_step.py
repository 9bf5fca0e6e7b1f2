#!/usr/bin/env python3
"""trace_step.py: where a decode step's time goes, from the kernel timeline that
bench/decode_profile writes with DECODE_PROFILE_TRACE=FILE (decode_profile.c, trace_begin: a
line "# measured T0 T1 STEPS", then start,end,name,grid,block,cluster a kernel, CUPTI ns).

With programmatic dependent launch a kernel starts while the one before it runs, so its duration
says little. What a kernel adds to the step is its end minus the previous kernel's end ("adds"):
the adds of a step's kernels sum to the step's span. Printed: the steps' span; per kernel (name,
grid, block) its launches a step, mean duration, mean lead (previous end minus its start: how long
it was resident before the kernel it waits for ended) and mean adds, with their sum a step; the
step cut into layers at the kernel that adds the most among those launched more than once a step
(the MLP kernel), each kind of layer with its kernels' mean adds and lead; and some kernels from
the middle of a step, in order.

With --diff, two timelines side by side (an A / B of two builds or settings): the spans, every kernel's adds a
step in A and in B and the difference (largest first), and each kind of layer the two have in
common (the same count a step and length; paired in order of count) position by position - the
names of both where they differ.

usage: trace_step.py FILE[.gz] [LAYER_KERNELS]   (LAYER_KERNELS: how many to list, default 24)
       trace_step.py --diff A[.gz] B[.gz]
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


def layer_kinds(keyed, table, steps, per):
    """The step cut into layers: at each launch of the kernel that adds the most among those
    launched more than once a step (the MLP kernel), up to the next. Pieces of the same kernel
    sequence are one kind. Returns the anchor and, per kind seen more than once a step (most
    frequent first), (sequence, pieces a step, mean adds and mean lead of each position)."""
    many = [k for k, t in table.items() if t[0] >= 2 * steps]
    if not many:
        return None, []
    anchor = max(many, key=lambda k: table[k][3])
    kinds = collections.defaultdict(list)  # kernel sequence -> its pieces' (adds, lead) lists
    for s in range(steps):
        step = keyed[s * per:(s + 1) * per]
        cuts = [i for i, k in enumerate(step) if k[0] == anchor] + [per]
        for a, b in zip(cuts, cuts[1:]):
            piece = step[a:b]
            kinds[tuple(k[0] for k in piece)].append(piece)
    out = []
    for seq, pieces in sorted(kinds.items(), key=lambda kv: -len(kv[1])):
        if len(pieces) < 2 * steps:
            continue
        n = len(pieces)
        adds = [sum(p[i][1] for p in pieces) / n for i in range(len(seq))]
        lead = [sum(p[i][2] for p in pieces) / n for i in range(len(seq))]
        out.append((seq, n / steps, adds, lead))
    return anchor, out


def layers(keyed, table, steps, per):
    anchor, kinds = layer_kinds(keyed, table, steps, per)
    if anchor is None:
        return
    print(f"\nlayers, from each {anchor.split()[0]} to the next (us; kinds seen more than once a step):")
    for seq, a_step, adds, lead in kinds:
        print(f"  {a_step:.0f} a step, {sum(adds):.2f} us each:")
        for i, key in enumerate(seq):
            print(f"    {i:3d} {key[:52]:52} adds {adds[i]:7.2f}  lead {lead[i]:7.2f}")


def read_trace(path):
    """The measured steps' kernels of FILE, in launch order: (records, steps, kernels a step);
    a record is (start, end, short name, grid, block)."""
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
        print(f"note: {path}: {len(recs)} kernels for {steps} steps: the last {len(recs) % steps} left out")
    return recs[: per * steps], steps, per


def analyse(recs, steps, per):
    """Per step its span and the host's gap before it; per kernel (name, grid, block) its
    launches, summed duration, lead and adds; every kernel's (key, adds, lead) in order."""
    spans, table = [], collections.defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    host_gaps, keyed = [], []
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
    return spans, host_gaps, table, keyed


def report(path, show):
    recs, steps, per = read_trace(path)
    print(f"{path}: {steps} steps, {per} kernels a step (the first: {recs[0][2]})")
    spans, host_gaps, table, keyed = analyse(recs, steps, per)
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


def diff(path_a, path_b):
    """A against B: spans, each kernel's adds a step, the layer kinds they share."""
    runs = []
    for path in (path_a, path_b):
        recs, steps, per = read_trace(path)
        spans, _, table, keyed = analyse(recs, steps, per)
        runs.append((path, steps, per, spans, table, keyed))
    (pa, sa, na, spa, ta, ka), (pb, sb, nb, spb, tb, kb) = runs
    span_a, span_b = sum(spa) / sa, sum(spb) / sb
    print(f"A {pa}: {sa} steps, {na} kernels a step\nB {pb}: {sb} steps, {nb} kernels a step")
    print(f"step span, us: A {span_a:.1f}  B {span_b:.1f}  B - A {span_b - span_a:+.1f}")
    print(f"\n{'kernel (grid, block): adds a step, us':58} {'A':>9} {'B':>9} {'B - A':>9}")
    rows = []
    for key in set(ta) | set(tb):
        a = ta[key][3] / sa if key in ta else 0.0
        b = tb[key][3] / sb if key in tb else 0.0
        rows.append((key, a, b))
    for key, a, b in sorted(rows, key=lambda r: (-abs(r[2] - r[1]), r[0])):
        print(f"{key[:58]:58} {a:9.1f} {b:9.1f} {b - a:+9.1f}")
    _, kinds_a = layer_kinds(ka, ta, sa, na)
    _, kinds_b = layer_kinds(kb, tb, sb, nb)
    used = set()
    for seq_a, n_a, adds_a, lead_a in kinds_a:
        match = next((j for j, (seq_b, n_b, _, _) in enumerate(kinds_b)
                      if j not in used and n_b == n_a and len(seq_b) == len(seq_a)), None)
        if match is None:
            print(f"\nlayer kind of A ({n_a:.0f} a step, {len(seq_a)} kernels): not in B")
            continue
        used.add(match)
        seq_b, _, adds_b, lead_b = kinds_b[match]
        print(f"\nlayers, {n_a:.0f} a step: A {sum(adds_a):.2f} us, B {sum(adds_b):.2f} us, "
              f"B - A {sum(adds_b) - sum(adds_a):+.2f} (adds; lead in brackets)")
        for i, (name_a, name_b) in enumerate(zip(seq_a, seq_b)):
            name = name_a[:44] if name_a == name_b else f"{name_a[:21]} | {name_b[:20]}"
            print(f"    {i:3d} {name:44} A {adds_a[i]:6.2f} ({lead_a[i]:5.2f})  "
                  f"B {adds_b[i]:6.2f} ({lead_b[i]:5.2f})  B - A {adds_b[i] - adds_a[i]:+6.2f}")


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "--diff":
        if len(sys.argv) != 4:
            print(__doc__, file=sys.stderr)
            sys.exit(2)
        diff(sys.argv[2], sys.argv[3])
        return
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    report(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 24)


if __name__ == "__main__":
    main()
