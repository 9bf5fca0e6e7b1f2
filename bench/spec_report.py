"""spec_report.py: what bench_spec_cpu.sh and bench_spec_gpu.sh share - keeping the best of a
point's repeated runs, picking the best speculative k, and table 1 (tps against
NUM_SPECULATIVE_TOKENS). Each script's report (a heredoc there) imports k_table and
step_seconds; the two commands are for the scripts' shell parts:

    python3 bench/spec_report.py best-of TMP NAME N  # TMP/NAME.json := the best decode tps
                                                     # of TMP/NAME.1.json .. TMP/NAME.N.json
    python3 bench/spec_report.py best-k TMP          # print the k in 1..8 whose TMP/kK.json
                                                     # has the best decode tps
"""
import json
import sys


def load(tmp, name):
    with open(f"{tmp}/{name}.json") as f:
        return json.load(f)


def step_seconds(r):
    """One plain decode step of an `engine bench` result: decode time over the tokens after
    each prompt's first."""
    return r["decode_s"] / (r["tokens"] - r["prompts"])


def k_table(J, ms_digits):
    """Table 1 for the runs J("k0") .. J("k8"): markdown lines, and the set of their
    output_hash values (one value: the nine runs served the same tokens)."""
    base = J("k0")
    step0 = step_seconds(base)
    lines = ["| k | tps | decode tps | decode speed-up | accepted drafts / step | tokens / verify "
             "| verify ms | verify / decode step | draft ms / token | draft | verify | other "
             "| accepted-length histogram | output_hash |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for k in range(9):
        r = J(f"k{k}")
        sp = r.get("speculation") or {}
        sh = r.get("decode_time_share") or {}
        steps = sp.get("steps") or 0
        dec = r["decode_s"]
        ver = sh.get("verify", 1.0) * dec / steps if steps else step_seconds(r)
        drf = sh.get("draft", 0.0) * dec / sp["drafted"] if sp.get("drafted") else 0.0
        lines.append(
            f"| {k} | {r['tps']:.1f} | {r['decode_tps']:.1f} | "
            f"{r['decode_tps'] / base['decode_tps']:.2f}x | {r.get('accept_len', 0):.2f} | "
            f"{r.get('tokens_per_step', 1.0):.2f} | {ver * 1e3:.{ms_digits}f} | "
            f"{ver / step0:.2f} | {drf * 1e3:.{ms_digits}f} | {sh.get('draft', 0):.1%} | "
            f"{sh.get('verify', 1):.1%} | {sh.get('other', 0):.1%} | "
            f"{sp.get('accept_hist', '-')} | {r['output_hash']} |")
    return lines, {J(f"k{k}")["output_hash"] for k in range(9)}


def main(argv):
    if len(argv) == 5 and argv[1] == "best-of":
        tmp, name, n = argv[2], argv[3], int(argv[4])
        runs = [load(tmp, f"{name}.{i}") for i in range(1, n + 1)]
        with open(f"{tmp}/{name}.json", "w") as f:
            json.dump(max(runs, key=lambda r: r["decode_tps"]), f)
    elif len(argv) == 3 and argv[1] == "best-k":
        print(max(range(1, 9), key=lambda k: load(argv[2], f"k{k}")["decode_tps"]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
