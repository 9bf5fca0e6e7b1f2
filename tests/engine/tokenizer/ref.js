// ref.js: reference ids from the JavaScript tokenizer of @lenml/tokenizers (a port of
// transformers.js) over Gemma 3's tokenizer.json, the file our C tokenizer reads too.
//
//   node ref.js TOKENIZER_DIR TEXTS_JSONL
//   node ref.js --decode TOKENIZER_DIR IDS_JSONL    one {"decoded": "..."} per {"ids": [...]}
//
// TOKENIZER_DIR holds tokenizer.json and tokenizer_config.json; TEXTS_JSONL has one
// {"text": "..."} per line. Prints one {"ids": [...], "decoded": "..."} per text, in the
// same form as tests/engine/tok_dump.c. No special tokens are added (add_special_tokens:
// false) and none are skipped when decoding, matching tokenizer_encode(..., add_bos = 0).
"use strict";
const fs = require("fs");
const path = require("path");
const { TokenizerLoader } = require("@lenml/tokenizers");

const args = process.argv.slice(2);
const decodeOnly = args[0] === "--decode";
const [dir, textsPath] = decodeOnly ? args.slice(1) : args;
if (!dir || !textsPath) {
  console.error("usage: node ref.js [--decode] TOKENIZER_DIR FILE_JSONL");
  process.exit(2);
}
const tokenizer = TokenizerLoader.fromPreTrained({
  tokenizerJSON: JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8")),
  tokenizerConfig: JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_config.json"), "utf8")),
});
const lines = fs.readFileSync(textsPath, "utf8").split("\n");
const out = [];
lines.forEach((line, i) => {
  if (line.trim() === "") return;
  if (decodeOnly) {
    const ids = JSON.parse(line).ids;
    const decoded = ids.length ? tokenizer.decode(ids, { skip_special_tokens: false }) : "";
    out.push(JSON.stringify({ decoded }));
    return;
  }
  const text = JSON.parse(line).text;
  if (typeof text !== "string") throw new Error(`${textsPath}:${i + 1}: expected {"text": "..."}`);
  const ids = tokenizer.encode(text, { add_special_tokens: false });
  // The JS decode refuses an empty list; the empty text decodes to "".
  const decoded = ids.length ? tokenizer.decode(ids, { skip_special_tokens: false }) : "";
  out.push(JSON.stringify({ ids, decoded }));
});
process.stdout.write(out.join("\n") + "\n");
