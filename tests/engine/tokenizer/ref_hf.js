// ref_hf.js: reference ids from the Hugging Face `tokenizers` library itself (the Rust code
// that transformers runs, through its Node binding, npm package `tokenizers`), over the
// same tokenizer.json. Same command line and output as ref.js:
//
//   node ref_hf.js TOKENIZER_DIR TEXTS_JSONL             {"ids": [...], "decoded": "..."}
//   node ref_hf.js --decode TOKENIZER_DIR IDS_JSONL      {"decoded": "..."}
//
// No special tokens are added and none are skipped when decoding.
"use strict";
const fs = require("fs");
const path = require("path");
const { Tokenizer } = require("tokenizers");

const args = process.argv.slice(2);
const decodeOnly = args[0] === "--decode";
const [dir, inputPath] = decodeOnly ? args.slice(1) : args;
if (!dir || !inputPath) {
  console.error("usage: node ref_hf.js [--decode] TOKENIZER_DIR FILE_JSONL");
  process.exit(2);
}
const tokenizer = Tokenizer.fromFile(path.join(dir, "tokenizer.json"));

(async () => {
  const lines = fs.readFileSync(inputPath, "utf8").split("\n").filter((l) => l.trim() !== "");
  const out = [];
  for (const line of lines) {
    const obj = JSON.parse(line);
    if (decodeOnly) {
      out.push(JSON.stringify({ decoded: await tokenizer.decode(obj.ids, false) }));
      continue;
    }
    const encoding = await tokenizer.encode(obj.text, null, { addSpecialTokens: false });
    const ids = encoding.getIds();
    out.push(JSON.stringify({ ids, decoded: await tokenizer.decode(ids, false) }));
  }
  process.stdout.write(out.join("\n") + "\n");
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
