// compare.js: compare our tokenizer's output with the reference, line by line.
//
//   node compare.js NAME INPUT_JSONL REFERENCE_JSONL OURS_JSONL KNOWN_JSON
//
// INPUT_JSONL holds the inputs ({"text"} or {"ids"}); REFERENCE_JSONL and OURS_JSONL the
// outputs of ref.js and tok_dump ({"ids", "decoded"} or {"decoded"}). Every line must be
// identical, except the ones KNOWN_JSON lists under NAME: for those, both outputs must be
// exactly what the file records (so a known difference that changes, or goes away, fails
// too). For texts, decode(encode(x)) == x is checked wherever the reference round-trips.
// Exits 1 with the first differences on failure; prints a one-line summary on success.
"use strict";
const fs = require("fs");
const util = require("util");

const [name, inputPath, refPath, oursPath, knownPath] = process.argv.slice(2);
if (!knownPath) {
  console.error("usage: node compare.js NAME INPUT_JSONL REFERENCE_JSONL OURS_JSONL KNOWN_JSON");
  process.exit(2);
}
const readJsonl = (p) =>
  fs.readFileSync(p, "utf8").split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l));
const inputs = readJsonl(inputPath);
const ref = readJsonl(refPath);
const ours = readJsonl(oursPath);
const known = new Map((JSON.parse(fs.readFileSync(knownPath, "utf8"))[name] || []).map((k) => [k.line, k]));

const failures = [];
if (ref.length !== inputs.length || ours.length !== inputs.length)
  failures.push(`line counts differ: ${inputs.length} inputs, ${ref.length} reference, ${ours.length} ours`);

let tokens = 0, roundtrips = 0, refRoundtrips = 0, same = 0;
const n = Math.min(inputs.length, ref.length, ours.length);
for (let i = 0; i < n; i++) {
  const line = i + 1, r = ref[i], o = ours[i], k = known.get(line);
  const show = (x) => {
    const s = JSON.stringify(x);
    return s.length > 300 ? s.slice(0, 300) + "..." : s;
  };
  if (k) {
    known.delete(line);
    if (!util.isDeepStrictEqual(r, k.reference) || !util.isDeepStrictEqual(o, k.ours))
      failures.push(`line ${line}: known difference (${k.reason}) changed:\n  reference ${show(r)}\n  ours      ${show(o)}`);
    continue;
  }
  if (!util.isDeepStrictEqual(r, o)) {
    let at = "";
    if (r.ids && o.ids) {
      let j = 0;
      while (j < r.ids.length && r.ids[j] === o.ids[j]) j++;
      at = ` (ids differ from position ${j})`;
    }
    failures.push(`line ${line}: input ${show(inputs[i])}${at}\n  reference ${show(r)}\n  ours      ${show(o)}`);
    continue;
  }
  same++;
  if (r.ids) tokens += r.ids.length;
  if (typeof inputs[i].text === "string" && r.decoded === inputs[i].text) {
    refRoundtrips++;
    if (o.decoded === inputs[i].text) roundtrips++;
    else failures.push(`line ${line}: decode(encode(x)) != x although the reference round-trips`);
  }
}
for (const [line, k] of known) failures.push(`line ${line}: listed as a known difference (${k.reason}) but not seen`);

if (failures.length) {
  console.error(`${name}: ${failures.length} failure(s):\n` + failures.slice(0, 10).join("\n"));
  process.exit(1);
}
const isText = inputs.length && typeof inputs[0].text === "string";
console.log(
  `${name}: ${same} of ${n} ${isText ? "texts" : "id lists"} identical` +
    (isText ? ` (${tokens} tokens); decode(encode(x)) == x for ${roundtrips} of ${refRoundtrips} that the reference round-trips` : "") +
    `; ${JSON.parse(fs.readFileSync(knownPath, "utf8"))[name]?.length || 0} known difference(s) as recorded`
);
