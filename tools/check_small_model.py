#!/usr/bin/env python3
"""check_small_model.py: checks that the shipped small model follows the project's formats.

  python3 tools/check_small_model.py [TARGET_DIR [ASSISTANT_DIR]]
                                     (default models/gemma4-tiny, models/gemma4-tiny-assistant)

What it checks, with plain Python (no torch), so that CI can run it on every change:
  config.json       model_type gemma4_text / gemma4_assistant, the fields the engine reads,
                    vocabularies that agree, the drafter's head_dim / KV heads equal to the target's
  model.safetensors header parses, bf16 weights (the drafter's token_ordering int64), tensor
                    shapes that follow from config.json, token_ordering a permutation of the
                    vocabulary that num_centroids divides
  tokenizer.json    BPE with byte fallback, the four specials at 0..3, <0x00>..<0xFF> present,
                    exactly vocab_size ids
  keepset.txt       every id once, '#' comments only
  eval/*.jsonl      prompts {"id", "prompt_token_ids", "text"} starting with <bos>, 600-1000 ids;
                    records {"context_token_ids", "target_token_ids"}, ids inside the vocabulary
  size              both folders together at most 25 MB
Each problem is reported as 'FILE[:LINE]: message' and the exit status is 1.
"""

import json
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZE_LIMIT = 25_000_000


class Problems:
    def __init__(self):
        self.items = []

    def add(self, where, msg):
        self.items.append(f"{where}: {msg}")


def read_json(path, P):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        P.add(path, "missing")
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        P.add(path, f"not JSON: {e}")
    return None


def safetensors_header(path, P):
    try:
        with open(path, "rb") as f:
            raw = f.read(8)
            if len(raw) != 8:
                P.add(path, "shorter than the 8-byte header length")
                return None
            n = struct.unpack("<Q", raw)[0]
            size = os.path.getsize(path)
            if n > size - 8:
                P.add(path, f"header length {n} exceeds the file ({size} bytes)")
                return None
            header = json.loads(f.read(n))
    except FileNotFoundError:
        P.add(path, "missing")
        return None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        P.add(path, f"header is not JSON: {e}")
        return None
    header.pop("__metadata__", None)
    return header


def read_token_ordering(path, entry):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        start, end = entry["data_offsets"]
        f.seek(8 + n + start)
        data = f.read(end - start)
    return list(struct.unpack(f"<{len(data) // 8}q", data))


def expect_shape(header, name, shape, dtype, path, P):
    t = header.get(name)
    if t is None:
        P.add(path, f"tensor {name} missing")
    elif t.get("dtype") != dtype or list(t.get("shape", [])) != list(shape):
        P.add(path, f"tensor {name}: {t.get('dtype')} {t.get('shape')}, expected {dtype} {list(shape)}")


def head_dims(cfg):
    """Per-layer head_dim as transformers 5.17 writes it (per_layer_config overrides)."""
    plc = cfg.get("per_layer_config") or {}
    return [plc.get(str(i), {}).get("head_dim", cfg["head_dim"]) for i in range(cfg["num_hidden_layers"])]


def check_target(d, P):
    cpath = os.path.join(d, "config.json")
    cfg = read_json(cpath, P)
    if cfg is None:
        return None
    need = ["model_type", "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
            "num_attention_heads", "num_key_value_heads", "head_dim", "layer_types",
            "sliding_window", "num_kv_shared_layers", "hidden_size_per_layer_input",
            "vocab_size_per_layer_input", "final_logit_softcapping", "rope_parameters"]
    for k in need:
        if k not in cfg:
            P.add(cpath, f"key {k!r} missing")
    if any(k not in cfg for k in need):
        return None
    if cfg["model_type"] != "gemma4_text":
        P.add(cpath, f"model_type {cfg['model_type']!r}, expected 'gemma4_text'")
    if len(cfg["layer_types"]) != cfg["num_hidden_layers"]:
        P.add(cpath, "layer_types does not have num_hidden_layers entries")
        return None
    spath = os.path.join(d, "model.safetensors")
    h = safetensors_header(spath, P)
    if h is not None:
        bad = sorted(k for k, v in h.items() if v.get("dtype") != "BF16")
        if bad:
            P.add(spath, f"not bf16: {bad[:5]}")
        V, H, L = cfg["vocab_size"], cfg["hidden_size"], cfg["num_hidden_layers"]
        ple = cfg["hidden_size_per_layer_input"]
        expect_shape(h, "model.embed_tokens.weight", [V, H], "BF16", spath, P)
        if ple:
            expect_shape(h, "model.embed_tokens_per_layer.weight",
                         [cfg["vocab_size_per_layer_input"], L * ple], "BF16", spath, P)
        first_shared = L - cfg["num_kv_shared_layers"]
        for i, hd in enumerate(head_dims(cfg)):
            pre = f"model.layers.{i}.self_attn."
            expect_shape(h, pre + "q_proj.weight", [cfg["num_attention_heads"] * hd, H], "BF16", spath, P)
            if i < first_shared:
                expect_shape(h, pre + "k_proj.weight", [cfg["num_key_value_heads"] * hd, H], "BF16", spath, P)
            elif pre + "k_proj.weight" in h:
                P.add(spath, f"KV-shared layer {i} has its own k_proj")
    return cfg


def check_tokenizer(d, vocab_size, P):
    path = os.path.join(d, "tokenizer.json")
    tok = read_json(path, P)
    if tok is None:
        return
    model = tok.get("model", {})
    if model.get("type") != "BPE" or not model.get("byte_fallback"):
        P.add(path, "model must be BPE with byte_fallback")
    vocab = model.get("vocab", {})
    if len(vocab) != vocab_size or sorted(vocab.values()) != list(range(vocab_size)):
        P.add(path, f"vocab must hold ids 0..{vocab_size - 1} exactly once (has {len(vocab)})")
    for i, s in enumerate(["<pad>", "<eos>", "<bos>", "<unk>"]):
        if vocab.get(s) != i:
            P.add(path, f"{s} must have id {i}")
    missing = [b for b in range(256) if f"<0x{b:02X}>" not in vocab]
    if missing:
        P.add(path, f"{len(missing)} byte tokens missing (first <0x{missing[0]:02X}>)")


def check_keepset(d, vocab_size, P):
    path = os.path.join(d, "keepset.txt")
    seen = {}
    try:
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                s = line.strip()
                if not s or s.startswith("#"):
                    continue
                if not s.isdigit() or int(s) >= vocab_size:
                    P.add(f"{path}:{lineno}", f"not a token id below {vocab_size}: {s!r}")
                elif int(s) in seen:
                    P.add(f"{path}:{lineno}", f"id {s} repeated (first at line {seen[int(s)]})")
                else:
                    seen[int(s)] = lineno
    except FileNotFoundError:
        P.add(path, "missing")
        return
    if len(seen) != vocab_size:
        P.add(path, f"lists {len(seen)} ids, expected all {vocab_size}")


def check_jsonl(path, kind, vocab_size, P):
    n = 0
    try:
        f = open(path, encoding="utf-8")
    except FileNotFoundError:
        P.add(path, "missing")
        return 0
    with f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                r = json.loads(line)
            except json.JSONDecodeError as e:
                P.add(where, f"not JSON: {e}")
                continue
            keys = ("prompt_token_ids",) if kind == "prompts" else ("context_token_ids", "target_token_ids")
            if not isinstance(r, dict) or any(not isinstance(r.get(k), list) or not r[k] for k in keys):
                P.add(where, f"expected an object with non-empty lists {', '.join(keys)}")
                continue
            for k in keys:
                if any(not isinstance(x, int) or not 0 <= x < vocab_size for x in r[k]):
                    P.add(where, f"{k} holds a value that is not a token id below {vocab_size}")
            if kind == "prompts":
                ids = r["prompt_token_ids"]
                if ids[0] != 2:
                    P.add(where, "prompt_token_ids must start with <bos> (2)")
                if not 600 <= len(ids) <= 1000:
                    P.add(where, f"prompt has {len(ids)} tokens, expected 600-1000")
                if not isinstance(r.get("id"), str) or not isinstance(r.get("text"), str):
                    P.add(where, "prompt needs string 'id' and 'text'")
            elif r["context_token_ids"][0] != 2:
                P.add(where, "context_token_ids must start with <bos> (2)")
            n += 1
    if n == 0:
        P.add(path, "no records")
    return n


def check_assistant(d, tcfg, P):
    cpath = os.path.join(d, "config.json")
    cfg = read_json(cpath, P)
    if cfg is None:
        return
    if cfg.get("model_type") != "gemma4_assistant":
        P.add(cpath, f"model_type {cfg.get('model_type')!r}, expected 'gemma4_assistant'")
        return
    text = cfg.get("text_config") or {}
    C, K = cfg.get("num_centroids"), cfg.get("centroid_intermediate_top_k")
    V = text.get("vocab_size")
    if V != tcfg["vocab_size"]:
        P.add(cpath, f"text_config.vocab_size {V} differs from the target's {tcfg['vocab_size']}")
        return
    if cfg.get("backbone_hidden_size") != tcfg["hidden_size"]:
        P.add(cpath, "backbone_hidden_size differs from the target's hidden_size")
    if not cfg.get("use_ordered_embeddings") or not isinstance(C, int) or C <= 0 or V % C:
        P.add(cpath, "needs use_ordered_embeddings and a num_centroids that divides the vocabulary")
        return
    if not isinstance(K, int) or not 1 <= K <= C:
        P.add(cpath, f"centroid_intermediate_top_k {K} outside 1..{C}")
    if text.get("num_key_value_heads") != tcfg["num_key_value_heads"]:
        P.add(cpath, "num_key_value_heads differs from the target's")
    types_t = dict(zip(tcfg["layer_types"], head_dims(tcfg)))
    for t, hd in zip(text.get("layer_types", []), head_dims(text)):
        if types_t.get(t) != hd:
            P.add(cpath, f"{t} head_dim {hd} differs from the target's {types_t.get(t)}")
    spath = os.path.join(d, "model.safetensors")
    h = safetensors_header(spath, P)
    if h is None:
        return
    entry = h.get("masked_embedding.token_ordering")
    if entry is None or entry.get("dtype") != "I64" or entry.get("shape") != [V]:
        P.add(spath, f"masked_embedding.token_ordering must be I64 [{V}]")
        return
    bad = sorted(k for k, v in h.items() if k != "masked_embedding.token_ordering" and v.get("dtype") != "BF16")
    if bad:
        P.add(spath, f"not bf16: {bad[:5]}")
    expect_shape(h, "masked_embedding.centroids.weight", [C, text["hidden_size"]], "BF16", spath, P)
    expect_shape(h, "pre_projection.weight", [text["hidden_size"], 2 * tcfg["hidden_size"]], "BF16", spath, P)
    if sorted(read_token_ordering(spath, entry)) != list(range(V)):
        P.add(spath, "token_ordering is not a permutation of the vocabulary")


def folder_bytes(d):
    return sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(d) for f in fs)


def check(target_dir, assistant_dir):
    P = Problems()
    tcfg = check_target(target_dir, P)
    if tcfg is not None:
        V = tcfg["vocab_size"]
        check_tokenizer(target_dir, V, P)
        check_keepset(target_dir, V, P)
        for s in ("tune", "holdout"):
            check_jsonl(os.path.join(target_dir, "eval", f"prompts_{s}.jsonl"), "prompts", V, P)
            check_jsonl(os.path.join(target_dir, "eval", f"ppl_{s}.jsonl"), "records", V, P)
        check_assistant(assistant_dir, tcfg, P)
    total = folder_bytes(target_dir) + folder_bytes(assistant_dir)
    if total > SIZE_LIMIT:
        P.add(target_dir, f"target and assistant folders hold {total} bytes, over {SIZE_LIMIT}")
    return P.items, total


def main():
    args = sys.argv[1:]
    if len(args) > 2 or any(a.startswith("-") for a in args):
        sys.exit("usage: check_small_model.py [TARGET_DIR [ASSISTANT_DIR]]")
    target = args[0] if args else os.path.join(ROOT, "models", "gemma4-tiny")
    assistant = args[1] if len(args) > 1 else os.path.join(ROOT, "models", "gemma4-tiny-assistant")
    problems, total = check(target, assistant)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"{len(problems)} problem(s)", file=sys.stderr)
        sys.exit(1)
    print(f"ok: {target} and {assistant} ({total} bytes)")


if __name__ == "__main__":
    main()
