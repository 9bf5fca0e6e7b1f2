// bench_ref.js: encode speed of the two reference tokenizers on one text file, for
// comparison with ours (bench.sh). Encodes the whole file repeatedly for about SECONDS.
//
//   node bench_ref.js js|hf TOKENIZER_DIR FILE SECONDS     prints one JSON line
"use strict";
const fs = require("fs");
const path = require("path");

const [which, dir, file, secondsArg] = process.argv.slice(2);
if (!["js", "hf"].includes(which) || !dir || !file || !secondsArg) {
  console.error("usage: node bench_ref.js js|hf TOKENIZER_DIR FILE SECONDS");
  process.exit(2);
}
const text = fs.readFileSync(file, "utf8");
const bytes = Buffer.byteLength(text, "utf8");
let encode;
if (which === "js") {
  const { TokenizerLoader } = require("@lenml/tokenizers");
  const tok = TokenizerLoader.fromPreTrained({
    tokenizerJSON: JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8")),
    tokenizerConfig: JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_config.json"), "utf8")),
  });
  // Its BPE keeps a cache of words seen; clear it so repetitions measure encoding.
  encode = async (s) => {
    tok.model.clear_cache?.();
    return tok.encode(s, { add_special_tokens: false }).length;
  };
} else {
  const { Tokenizer } = require("tokenizers");
  const tok = Tokenizer.fromFile(path.join(dir, "tokenizer.json"));
  encode = async (s) => (await tok.encode(s, null, { addSpecialTokens: false })).getIds().length;
}
(async () => {
  const seconds = Number(secondsArg);
  let reps = 0, tokens = 0;
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  let elapsed = 0;
  do {
    tokens += await encode(text);
    reps++;
    elapsed = Number(process.hrtime.bigint() - t0) / 1e9;
  } while (elapsed < seconds);
  const c = process.cpuUsage(c0), cpu = (c.user + c.system) / 1e6; // all threads of the process
  console.log(JSON.stringify({ impl: which, bytes, repetitions: reps, wall_s: +elapsed.toFixed(3),
    cpu_s: +cpu.toFixed(3), MB_per_s: +((bytes * reps) / elapsed / 1e6).toFixed(2),
    MB_per_cpu_s: +((bytes * reps) / cpu / 1e6).toFixed(2), tokens_per_cpu_s: Math.round(tokens / cpu) }));
})();
