#!/usr/bin/env python3
"""ncu_step_split.py: one decode step's time split by kernel, from an ncu capture of it.

    DECODE_PROFILE_CUSTOM="ncu:" DECODE_PROFILE_NCU=1 ncu --profile-from-start off \
        --graph-profiling node --cache-control none --clock-control none \
        --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv \
        build/bench/decode_profile MODEL 256 1 > step.csv
    python3 bench/ncu_step_split.py step.csv          (a .gz file is read as well)

ncu times every kernel of the replayed CUDA graph on its own, one after the other: their sum is
above the graph's step time (a replay overlaps each kernel's launch and first weight loads with
the previous kernel), but each kernel's own cost is exact - where decode_profile's "profiled"
run (CUDA events, graphs off) adds a launch and a host round trip to every op. Kernels are
grouped by their role in the Gemma 4 layer (engine/forward.c): the matrix-vector launches by
their neighbours - q + k + v before the norm / RoPE / KV kernel, o after the attention (its merge
kernel, or the cluster kernel that merges in shared memory),
gate + up and down after the norm that follows o, the per-layer gate and projection after the
norm that follows down, the per-layer input projection after the embeddings, the head before
the softcap / argmax - and every other kernel by its name. When the capture holds several
steps (each ends with argmax_pass2), the last complete one is used.

Prints a Markdown table (role, launches, us in the step, us each, share, GB/s read from DRAM)
and exits 2 with a message naming the file when it is not such a capture.
"""
import collections
import csv
import gzip
import io
import re
import sys

UNITS = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3,
         "byte": 1.0, "B": 1.0, "Kbyte": 1e3, "KB": 1e3, "Mbyte": 1e6, "MB": 1e6,
         "Gbyte": 1e9, "GB": 1e9}
TIME, DRAM = "gpu__time_duration.sum", "dram__bytes_read.sum"
MATVEC = ("matvec1_kernel", "matvec_kernel")


def fail(path, why):
    print(f"ncu_step_split: {path}: {why}", file=sys.stderr)
    sys.exit(2)


def read_kernels(path):
    """The capture's kernels in launch order: dicts of name, grid, us, dram bytes."""
    try:
        raw = gzip.open(path).read() if path.endswith(".gz") else open(path, "rb").read()
    except OSError as e:
        fail(path, e.strerror or str(e))
    header, kernels = None, collections.OrderedDict()
    for row in csv.reader(io.StringIO(raw.decode("utf-8", "replace"))):
        if row and row[0] == "ID":
            header = row
            continue
        if not header or len(row) != len(header):
            continue  # ncu's own messages, the program's output
        r = dict(zip(header, row))
        try:
            k = kernels.setdefault(int(r["ID"]), {"name": short(r["Kernel Name"]),
                                                  "grid": r.get("Grid Size", "")})
            value = float(r["Metric Value"].replace(",", ""))
        except (KeyError, ValueError) as e:
            fail(path, f"row {row[:1]}: {e}")
        k[r["Metric Name"]] = value * UNITS.get(r.get("Metric Unit", ""), 1.0)
    if not kernels:
        fail(path, "no ncu --csv kernel rows (an \"ID\" header line and its rows)")
    out = list(kernels.values())
    for k in out:
        if TIME not in k:
            fail(path, f"kernel {k['name']} has no {TIME} (ask ncu for --metrics {TIME},{DRAM})")
    return out


def short(name):
    """'void matvec1_kernel<__nv_bfloat16, 8, ...>(mv_launch, ...)' -> 'matvec1_kernel'."""
    name = re.sub(r"^void ", "", name)
    return re.split(r"[<(]", name, maxsplit=1)[0].strip()


def last_step(kernels):
    ends = [i for i, k in enumerate(kernels) if k["name"] == "argmax_pass2"]
    return kernels[ends[-2] + 1:ends[-1] + 1] if len(ends) >= 2 else kernels


def roles(step):
    """The role of every kernel of the step, in order."""
    out, last_mv = [], None  # last_mv: role of the previous matrix-vector launch
    for i, k in enumerate(step):
        name = k["name"]
        prev = step[i - 1]["name"] if i else ""
        nxt = step[i + 1]["name"] if i + 1 < len(step) else ""
        if name not in MATVEC:
            out.append(name)
            continue
        if nxt == "norm_rope_store_kernel":
            role = "q + k + v"
        elif prev in ("attn_merge_kernel", "attn_cluster_kernel"):
            role = "o"
        elif prev == "embed_kernel":
            role = "per-layer input projection"
        elif nxt.startswith(("softcap", "argmax")) or nxt == "":
            role = "head"
        elif prev == "norm_add_norm_kernel" and last_mv == "o":
            role = "gate + up"
        elif prev == "norm_add_norm_kernel" and last_mv == "down":
            role = "per-layer gate"
        elif prev in MATVEC and last_mv == "gate + up":
            role = "down"
        elif prev in MATVEC and last_mv == "per-layer gate":
            role = "per-layer projection"
        else:
            role = f"other matrix-vector, grid {k['grid']}"
        out.append(role)
        last_mv = role
    return out


def main(argv):
    if len(argv) != 2:
        print("usage: ncu_step_split.py NCU_CSV[.gz]", file=sys.stderr)
        return 2
    step = last_step(read_kernels(argv[1]))
    groups = collections.OrderedDict()
    for k, role in zip(step, roles(step)):
        g = groups.setdefault(role, [0, 0.0, 0.0])
        g[0] += 1
        g[1] += k[TIME]
        g[2] += k.get(DRAM, 0.0)
    total = sum(g[1] for g in groups.values())
    print(f"kernels in the step: {len(step)}; their isolated times add up to {total:.1f} us\n")
    print("| kernel | launches | us in the step | us each | share | GB/s read from DRAM |")
    print("|---|---|---|---|---|---|")
    for role, (n, us, dram) in sorted(groups.items(), key=lambda kv: -kv[1][1]):
        print(f"| {role} | {n} | {us:.1f} | {us / n:.2f} | {100 * us / total:.1f} % | "
              f"{dram / us / 1e3:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
