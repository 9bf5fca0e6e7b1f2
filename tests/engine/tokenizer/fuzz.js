// fuzz.js: a reproducible set of random texts for the reference comparison, built to poke
// at BPE merge order: runs of real vocabulary pieces (so long merge chains happen), single
// characters from many scripts and from ranges that need byte fallback, whitespace runs,
// and added-token strings (whole and cut short) glued to their neighbours.
//
//   node fuzz.js TOKENIZER_JSON SEED COUNT > fuzz.jsonl      one {"text": "..."} per line
"use strict";
const fs = require("fs");

const [file, seedArg, countArg] = process.argv.slice(2);
if (!file || !seedArg || !countArg) {
  console.error("usage: node fuzz.js TOKENIZER_JSON SEED COUNT");
  process.exit(2);
}
const tok = JSON.parse(fs.readFileSync(file, "utf8"));

// mulberry32: a small seeded generator, so every run makes the same texts.
let state = Number(seedArg) >>> 0;
function rand() {
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (a) => a[Math.floor(rand() * a.length)];

const pieces = Object.keys(tok.model.vocab)
  .filter((p) => !/^<0x[0-9A-F]{2}>$/.test(p))
  .map((p) => p.replaceAll("\u2581", " "));
const added = (tok.added_tokens || []).map((a) => a.content);
const ranges = [
  [0x20, 0x7e], [0xa0, 0x24f], [0x370, 0x3ff], [0x400, 0x4ff], [0x590, 0x6ff], [0x900, 0x97f],
  [0xe00, 0xe7f], [0x1100, 0x11ff], [0x3040, 0x30ff], [0x4e00, 0x9fff], [0xac00, 0xd7a3],
  [0x1f300, 0x1faff], [0x20000, 0x2a6df], [0xe000, 0xf8ff], [0xf0000, 0xf00ff], [0x10000, 0x1007f],
  [0x300, 0x36f], [0x2000, 0x206f], [0x1, 0x1f],
];
const spaces = [" ", "  ", "   ", "\t", "\n", "\n\n", " \n", "\r\n", "\u2581", " ".repeat(33), "\n".repeat(33)];

function part() {
  const r = rand();
  if (r < 0.55) return pick(pieces);
  if (r < 0.75) {
    const [lo, hi] = pick(ranges);
    return String.fromCodePoint(lo + Math.floor(rand() * (hi - lo + 1)));
  }
  if (r < 0.9) return pick(spaces);
  const a = added.length ? pick(added) : pick(pieces);
  return rand() < 0.7 ? a : a.slice(0, Math.max(1, Math.floor(rand() * a.length)));
}

const count = Number(countArg);
const lines = [];
for (let i = 0; i < count; i++) {
  const n = 1 + Math.floor(rand() * (rand() < 0.1 ? 400 : 40));
  let s = "";
  for (let k = 0; k < n; k++) s += part();
  lines.push(JSON.stringify({ text: s }));
}
process.stdout.write(lines.join("\n") + "\n");
