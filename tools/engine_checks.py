#!/usr/bin/env python3
"""engine_checks.py: the small model's perplexity by sliding window, measured with our C engine
beside transformers' figures for the same records (docs/small_model/engine_checks.json).

For each evaluation set (tune, holdout) and each window the evidence measured
(docs/small_model/evidence.json, ppl_window_<set>), runs
    engine ppl MODEL --data MODEL/eval --set <set>   with SLIDING_WINDOW=<window>
on the CPU and records the engine's perplexity, transformers' and their relative difference;
the model card prints the table. Plain Python, no torch:
  python3 tools/engine_checks.py [--engine build/engine/engine] [--model models/gemma4-tiny]
                                 [--logs docs/small_model]
"""

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def engine_ppl(engine, model, split, window, threads):
    env = dict(os.environ, SLIDING_WINDOW=str(window), TUNER_PROMPT_SET=split,
               OMP_NUM_THREADS=str(threads), OMP_WAIT_POLICY="passive")
    cmd = [engine, "ppl", model, "--data", os.path.join(model, "eval")]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} (SLIDING_WINDOW={window}, set {split}): exit {p.returncode}: "
                 f"{p.stderr.strip()[-400:]}")
    try:
        r = json.loads(p.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        sys.exit(f"{' '.join(cmd)}: no JSON result line in its output")
    want = os.path.join(model, "eval", f"ppl_{split}.jsonl")
    if os.path.abspath(r["ppl_file"]) != os.path.abspath(want):
        sys.exit(f"{' '.join(cmd)}: scored {r['ppl_file']}, expected {want}")
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", default=os.path.join(ROOT, "build", "engine", "engine"))
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "gemma4-tiny"))
    ap.add_argument("--logs", default=os.path.join(ROOT, "docs", "small_model"))
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    ev_path = os.path.join(args.logs, "evidence.json")
    try:
        with open(ev_path, encoding="utf-8") as f:
            ev = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        sys.exit(f"{ev_path}: {e}")
    rows = []
    for split in ("tune", "holdout"):
        for t in ev[f"ppl_window_{split}"]:
            r = engine_ppl(args.engine, args.model, split, t["window"], args.threads)
            rows.append({"set": split, "window": t["window"], "engine_ppl": r["ppl"],
                         "transformers_ppl": t["ppl"],
                         "relative_difference": r["ppl"] / t["ppl"] - 1,
                         "wall_s": round(r["wall_s"], 2)})
            print(f"{split} window {t['window']}: engine {r['ppl']:.4f}, transformers {t['ppl']:.4f}",
                  flush=True)
    out = {"what": "Perplexity of the shipped gemma4-tiny by SLIDING_WINDOW, measured with this "
                   "project's C engine on the CPU (`engine ppl`, bf16 weights, fp32 math, "
                   f"{args.threads} threads) beside transformers' figure for the same records "
                   "(evidence.json).",
           "made": f"tools/engine_checks.py on {datetime.date.today().isoformat()}, "
                   f"{platform.machine()}",
           "rows": rows}
    path = os.path.join(args.logs, "engine_checks.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    worst = max(abs(r["relative_difference"]) for r in rows)
    print(f"wrote {path}: {len(rows)} rows, largest relative difference {worst:.2e}")


if __name__ == "__main__":
    main()
