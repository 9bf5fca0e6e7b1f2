"""target.py: the target model, a Gemma4ForCausalLM with E4B's features, and its training.

Architecture (Gemma4TextConfig; E4B's value in brackets):
  hidden 256 [2560], MLP 512 [10240], 8 layers [42], 8 query heads [8], 2 KV heads [2],
  head_dim 32 on sliding layers [256] and 64 on full layers [512], proportional RoPE with
  partial_rotary_factor 0.25 on full layers (transformers' default), last 2 layers share KV [18]
  with a double-wide MLP, per-layer embeddings of width 32 [256], tied head, final logit
  softcap 30 [30], native sliding window --sliding-window (default 512) [512], vocabulary
  6144 [262144].
  Layer layouts (--layout; E4B: 5 sliding then 1 full, 7 times):
    late-full   S S S S S F S F   two full layers [7], the last one kv-shared
    first-full  F S S S S S S S   one full layer, first: it sees the whole context, but only
                                  as token embeddings (no earlier layer has mixed in the
                                  neighbours), so copying a name together with what follows it
                                  (an induction circuit) has to go through sliding layers, as
                                  most of E4B's long-range reading does through its 35 sliding
                                  layers; in the late-full layout the full layers can do all of
                                  it, out of the window knob's reach.
Training: random windows of whole training documents (<bos> + 2047 tokens, so every sliding
layer sees far past its window and long context pays), AdamW, bf16 autocast, a
cosine schedule over a step count fixed from the measured speed and the time budget, dropout
on the residual branches (added by forward hooks; the weights stay plain Gemma 4), and the
checkpoint with the best validation loss kept. Optional augmentations: augment.py.
"""

import copy
import math
import random
import time

import torch
import torch.nn.functional as F

from .augment import copy_augment, repeat_augment
from .layouts import LAYOUTS
from .tokenizer import BOS_ID, EOS_ID, PAD_ID

# The attention shapes the drafter must share with the target. transformers 5.17 keeps head_dim
# and the KV-head count per layer (config.per_layer_config), so they are read from here, not
# from a loaded config. The sliding window is the target's own (the drafter copies it).
ATTN = {"num_key_value_heads": 2, "head_dim": 32, "global_head_dim": 64}


def target_config(vocab_size, layout="late-full", window=512):
    from transformers import Gemma4TextConfig

    layer_types = LAYOUTS[layout]
    return Gemma4TextConfig(
        vocab_size=vocab_size,
        hidden_size=256,
        intermediate_size=512,
        num_hidden_layers=len(layer_types),
        num_attention_heads=8,
        num_key_value_heads=ATTN["num_key_value_heads"],
        head_dim=ATTN["head_dim"],
        global_head_dim=ATTN["global_head_dim"],
        hidden_activation="gelu_pytorch_tanh",
        max_position_embeddings=4096,
        rms_norm_eps=1e-6,
        pad_token_id=PAD_ID,
        eos_token_id=EOS_ID,
        bos_token_id=BOS_ID,
        tie_word_embeddings=True,
        attention_bias=False,
        attention_dropout=0.0,
        sliding_window=window,
        layer_types=layer_types,
        final_logit_softcapping=30.0,
        vocab_size_per_layer_input=vocab_size,
        hidden_size_per_layer_input=32,
        attention_k_eq_v=False,
        num_kv_shared_layers=2,
        use_double_wide_mlp=True,
        enable_moe_block=False,
    )


def build_target(vocab_size, device, layout="late-full", window=512):
    from transformers import Gemma4ForCausalLM

    config = target_config(vocab_size, layout, window)
    model = Gemma4ForCausalLM(config).to(device=device, dtype=torch.float32)
    return model


def set_sliding_window(model, window):
    """Override the sliding window of a Gemma 4 text model in place (config and layers)."""
    model.config.sliding_window = window
    for layer in model.model.layers:
        if getattr(layer.self_attn, "is_sliding", False):
            layer.self_attn.sliding_window = window


def add_residual_dropout(model, p):
    """Dropout on each attention and MLP output while training (hooks, no new weights)."""
    handles = []

    def drop(_module, _inputs, output):
        if not _module.training or p <= 0:
            return output
        if isinstance(output, tuple):
            return (F.dropout(output[0], p, True),) + tuple(output[1:])
        return F.dropout(output, p, True)

    for layer in model.model.layers:
        handles.append(layer.self_attn.register_forward_hook(drop))
        handles.append(layer.mlp.register_forward_hook(drop))
    return handles


class WindowSampler:
    """Random <bos>-prefixed windows of seq_len tokens from whole documents; with copy_p > 0
    that share of windows is copy-augmented, with repeat_p > 0 that share is a repeated block
    (repeat_augment; the two exclude each other), and with renamed copies of the documents given
    (renamed[i]: token lists of document i with its names renamed, augment.rename_entities),
    a share rename_p of windows is cut from one of those instead (augment.py). Documents are
    drawn in proportion to their length, or, with first_share given, the first n_first
    documents (Brown's) get that share of the draws together and the rest the remainder."""

    def __init__(self, docs_ids, seq_len, seed, copy_p=0.0, renamed=None, rename_p=0.0,
                 repeat_p=0.0, n_first=None, first_share=None):
        keep = [i for i, d in enumerate(docs_ids) if len(d) >= seq_len]
        self.docs = [torch.tensor(docs_ids[i], dtype=torch.long) for i in keep]
        if not self.docs:
            raise ValueError(f"no document has {seq_len} tokens")
        self.renamed = [
            [torch.tensor(v, dtype=torch.long) for v in renamed[i] if len(v) >= seq_len]
            for i in keep
        ] if renamed else None
        self.rename_p = rename_p if renamed else 0.0
        lengths = torch.tensor([len(d) for d in self.docs], dtype=torch.float)
        self.weights = lengths / lengths.sum()
        if first_share is not None:
            first = torch.tensor([i < n_first for i in keep])
            if not 0 < first_share < 1 or first.all() or not first.any():
                raise ValueError(f"first_share {first_share}: needs 0 < share < 1 and documents "
                                 "on both sides")
            self.weights = torch.where(first, first_share * self.weights / self.weights[first].sum(),
                                       (1 - first_share) * self.weights / self.weights[~first].sum())
        self.seq_len = seq_len
        self.gen = torch.Generator().manual_seed(seed)
        self.n_tokens = int(lengths.sum().item())
        self.copy_p = copy_p
        self.repeat_p = repeat_p
        self.rng = random.Random(seed)

    def batch(self, batch_size):
        doc_idx = torch.multinomial(self.weights, batch_size, replacement=True, generator=self.gen)
        rows = []
        for i in doc_idx.tolist():
            d = self.docs[i]
            if self.rename_p > 0 and self.renamed[i] and self.rng.random() < self.rename_p:
                d = self.renamed[i][self.rng.randrange(len(self.renamed[i]))]
            start = int(torch.randint(0, len(d) - (self.seq_len - 1) + 1, (1,), generator=self.gen))
            row = torch.cat([torch.tensor([BOS_ID]), d[start : start + self.seq_len - 1]])
            if self.repeat_p > 0 and self.rng.random() < self.repeat_p:
                row = torch.tensor(repeat_augment(row.tolist(), self.rng))
            elif self.copy_p > 0 and self.rng.random() < self.copy_p:
                row = torch.tensor(copy_augment(row.tolist(), self.rng))
            rows.append(row)
        return torch.stack(rows)


def fixed_windows(docs_ids, seq_len, per_doc):
    """Deterministic validation windows: per_doc evenly spaced windows from each document."""
    rows = []
    for d in docs_ids:
        if len(d) < seq_len:
            continue
        span = len(d) - (seq_len - 1)
        for k in range(per_doc):
            start = (span * k) // max(per_doc, 1)
            rows.append([BOS_ID] + list(d[start : start + seq_len - 1]))
    return torch.tensor(rows, dtype=torch.long)


def lm_loss(model, ids):
    logits = model(input_ids=ids, use_cache=False).logits
    return F.cross_entropy(
        logits[:, :-1].float().reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1)
    )


@torch.no_grad()
def eval_loss(model, windows, device, batch_size=16):
    model.eval()
    total, n = 0.0, 0
    for i in range(0, len(windows), batch_size):
        ids = windows[i : i + batch_size].to(device)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(input_ids=ids, use_cache=False).logits
        nll = F.cross_entropy(
            logits[:, :-1].float().reshape(-1, logits.shape[-1]),
            ids[:, 1:].reshape(-1),
            reduction="sum",
        )
        total += nll.item()
        n += ids[:, 1:].numel()
    model.train()
    return total / n


def train_target(model, sampler, val_windows, device, budget_s, args, log):
    """Train in place until the step count or time budget; return (best state, history)."""
    t0 = time.time()
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if p.ndim < 2 or "norm" in name else decay).append(p)
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": args.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=args.lr,
        betas=(0.9, 0.95),
        fused=True,
    )
    native = model.config.sliding_window
    hooks = add_residual_dropout(model, args.dropout)
    model.train()
    tokens_per_step = args.batch_size * sampler.seq_len
    steps_per_epoch = max(1, sampler.n_tokens // tokens_per_step)
    max_steps_epochs = int(args.max_epochs * steps_per_epoch)

    history = {"train": [], "val": [], "tokens_per_step": tokens_per_step}
    best = {"val": float("inf"), "state": None, "step": 0}
    total_steps = None
    step = 0
    last_eval = time.time()
    ema = None
    while True:
        elapsed = time.time() - t0
        if step == 10:
            t10 = time.time()
        if total_steps is None and step == 30:
            rate = 20 / (time.time() - t10)
            total_steps = max(100, min(max_steps_epochs, step + int(rate * (budget_s - elapsed) * 0.95)))
            log(f"target: {rate:.2f} steps/s -> {total_steps} steps "
                f"({total_steps / steps_per_epoch:.1f} epochs of {sampler.n_tokens} tokens)")
        planned = total_steps or 10**9
        if step >= planned or elapsed > budget_s:
            break
        warm = min(1.0, (step + 1) / args.warmup)
        frac = min(1.0, step / planned)
        lr = args.lr * warm * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))
        for g in opt.param_groups:
            g["lr"] = lr
        ids = sampler.batch(args.batch_size).to(device, non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = lm_loss(model, ids)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        if step % 10 == 0 or step == 1:
            lv = loss.item()
            ema = lv if ema is None else 0.9 * ema + 0.1 * lv
            history["train"].append({"step": step, "loss": round(lv, 4), "t": round(elapsed, 1)})
        is_last = (total_steps is not None and step >= total_steps) or time.time() - t0 > budget_s
        due = (step % args.eval_every_steps == 0) if args.eval_every_steps > 0 else (
            time.time() - last_eval > args.eval_every_s)
        if due or is_last:
            v = eval_loss(model, val_windows, device)
            row = {"step": step, "loss": round(v, 4), "t": round(elapsed, 1)}
            if args.val_window:
                # The same windows with the sliding layers cut to val_window: does the
                # model use its native window (the knob the tuner turns)?
                set_sliding_window(model, args.val_window)
                row[f"loss_window_{args.val_window}"] = round(eval_loss(model, val_windows, device), 4)
                set_sliding_window(model, native)
            history["val"].append(row)
            log(f"target step {step}/{planned} lr {lr:.2e} train~{ema:.3f} val {row} "
                f"ppl {math.exp(v):.1f} t {elapsed:.0f}s")
            if v < best["val"]:
                best = {"val": v, "state": copy.deepcopy(model.state_dict()), "step": step}
            last_eval = time.time()
    if not history["val"] or history["val"][-1]["step"] != step:
        v = eval_loss(model, val_windows, device)
        history["val"].append({"step": step, "loss": round(v, 4), "t": round(time.time() - t0, 1)})
        if v < best["val"]:
            best = {"val": v, "state": copy.deepcopy(model.state_dict()), "step": step}
    for h in hooks:
        h.remove()
    model.eval()
    history["steps"] = step
    history["best_step"] = best["step"]
    history["best_val_loss"] = best["val"]
    history["seconds"] = round(time.time() - t0, 1)
    return best["state"], history
