#!/usr/bin/env bash
# install_small_model.sh: puts what tools/gpu_run.sh returned into the repository.
#
#   tools/install_small_model.sh FILES_DIR      (the run tool's files_at: log.txt, r.tgz.part-*)
#
# Unpacks the parts, copies the model folders to models/, the training and evaluation records
# to docs/small_model/ (acceptance_hf.json from evidence.json, or from the log when the run was
# cut before it saved them), regenerates the model card and checks the files. The engine
# cross-check (docs/small_model/engine_checks.json) belongs to the old model and is removed.
set -euo pipefail
src=${1:?usage: install_small_model.sh FILES_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
ls "$src"/r.tgz.part-* >/dev/null 2>&1 || { echo "$src: no r.tgz.part-* files" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat "$src"/r.tgz.part-* | tar xz -C "$tmp"
w="$tmp/work"
for d in gemma4-tiny gemma4-tiny-assistant; do
    [ -f "$w/$d/model.safetensors" ] || { echo "$src: the run produced no $d/model.safetensors" >&2; exit 1; }
done
for d in gemma4-tiny gemma4-tiny-assistant; do
    find "$root/models/$d" -mindepth 1 ! -name README.md -delete
    cp -r "$w/$d/." "$root/models/$d/"
    chmod -R u+rw,go+r "$root/models/$d"
done
logs="$root/docs/small_model"
mkdir -p "$logs"
cp "$w/logs/evidence.json" "$w/logs/target_history.json" "$w/logs/assistant_history.json" "$logs/"
cp "$w/logs/tokenizer.json" "$logs/tokenizer_summary.json"
tr '\r' '\n' <"$src/log.txt" | grep -v "Loading weights\|Writing model shards" >"$logs/device_log.txt"
rm -f "$logs/engine_checks.json"
python3 - "$logs" <<'PY'
import ast, json, re, sys
logs = sys.argv[1]
ev = json.load(open(f"{logs}/evidence.json"))
hf = ev.get("acceptance_hf")
if not hf or not hf.get("rows"):
    rows = []
    for line in open(f"{logs}/device_log.txt"):
        if "run finished" in line:
            rows = []  # rows of the smoke run come first
        m = re.search(r"hf assisted k=\d+: (\{.*\})", line)
        if m:
            rows.append(ast.literal_eval(m.group(1)))
    hf = {"prompts": None, "new_tokens": None, "rows": rows, "source": "device_log.txt"}
json.dump(hf, open(f"{logs}/acceptance_hf.json", "w"), indent=1)
print(f"acceptance_hf.json: {len(hf['rows'])} rows")
PY
python3 "$root/tools/write_model_card.py"
python3 "$root/tools/check_small_model.py"
