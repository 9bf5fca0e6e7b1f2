# Every trial records the node it ran on (host and model), and the report groups the runs by
# the node's model: one model in a local sweep; two when the journal says so (as when a
# study's runs were spread over two kinds of nodes), with the points measured on both side
# by side.
source "$TESTS_DIR/sweep_lib.sh"

write_space nodes.yaml <<'YAML'
study: nodes
engine: {command: [@ENGINE@], timeout: 20}
objective: {metric: tps, direction: maximize}
constraints: [ppl <= 2.45]
parameters:
  SLIDING_WINDOW: {type: int, min: 256, max: 512, step: 128}
strategy: grid
repeats: 2
verify: {top: 1, repeats: 1}
YAML
"$TUNER" sweep nodes.yaml >sweep.out 2>sweep.err || { cat sweep.err; fail "sweep"; }
tr=out/nodes/trials.jsonl
host=$(hostname)
python3 - $tr "$host" <<'PY' || fail "trials do not record their node"
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    assert r["node"]["host"] == sys.argv[2], r.get("node")
    assert r["node"]["model"], r
    assert "slurm" not in r, r
PY
model=$(head -1 $tr | json_field model)
"$TUNER" report nodes --stdout >one.md 2>one.err || { cat one.err; fail "report"; }
expect_contains one.md "## Nodes"
expect_contains one.md "All runs ran on one model"
expect_contains one.md "| $model | $host | 6 | 1 |"

# Two models: the first repeat of every point on "GPU A" (host a1), the second on "GPU B"
# (host b1), at half the speed.
python3 - $tr <<'PY'
import json, sys
lines = []
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["phase"] != "verify" and r["repeat"] == 1:
        r["node"] = {"host": "b1", "model": "GPU B"}
        r["metrics"]["tps"] /= 2
    else:
        r["node"] = {"host": "a1", "model": "GPU A"}
    lines.append(json.dumps(r, separators=(",", ":")) + "\n")
open(sys.argv[1], "w").writelines(lines)
PY
"$TUNER" report nodes --stdout >two.md 2>two.err || { cat two.err; fail "report of two models"; }
expect_contains two.md "ran on more than one model"
expect_contains two.md "| GPU A | a1 | 3 | 1 |"
expect_contains two.md "| GPU B | b1 | 3 | 0 |"
expect_contains two.md "| point | GPU A | GPU B |"
tps=$(grep '"SLIDING_WINDOW":"512"' $tr | head -1 | json_field tps)
expect_contains two.md "| \`SLIDING_WINDOW=512\` | $(python3 -c "print('%.6g' % $tps)") | $(python3 -c "print('%.6g' % ($tps / 2))") |"
echo "PASS"
