"""evaluate.py: the evidence, measured with transformers on the shipped (bf16) files.

perplexity        teacher-forced over {context_token_ids, target_token_ids} records:
                  exp(total NLL of the target tokens / their count), each target token scored
                  given everything before it; at the native sliding window and overridden ones.
keepset           the head restricted to the first N ids of keepset.txt: coverage (share of
                  target tokens kept), ppl (infinite when any target token is dropped) and ppl
                  over the covered tokens (softmax over the kept ids only, as a pruned head does).
acceptance        transformers' own assisted generation (generate(assistant_model=...)), greedy,
                  for 1..8 draft tokens: tokens per target forward, counted by a hook on the
                  target; its output is checked equal to plain greedy decoding. Beside it an
                  exact batched replay of the candidate generator's drafting over every
                  position of the target's greedy continuations of all holdout prompts, for
                  each cluster budget, used to choose centroid_intermediate_top_k.
"""

import math
import time

import torch
import torch.nn.functional as F


def set_window(model, window):
    """Override the sliding window of a loaded Gemma 4 text model in place."""
    from .target import set_sliding_window

    set_sliding_window(model, window)


@torch.no_grad()
def record_logprobs(model, records, device):
    """Per record: log-softmax rows [n_target, V] (float32, CPU) for the target positions."""
    out = []
    for r in records:
        ctx, tgt = r["context_token_ids"], r["target_token_ids"]
        ids = torch.tensor([ctx + tgt[:-1]], device=device)
        logits = model(input_ids=ids, use_cache=False).logits[0, len(ctx) - 1 :].float()
        out.append(logits.cpu())
    return out


def ppl_from_logits(all_logits, records, kept=None):
    """(ppl, ppl over covered tokens, coverage) with an optional kept-id set (LongTensor)."""
    nll, n, n_cov, nll_cov = 0.0, 0, 0, 0.0
    mask = None
    if kept is not None:
        mask = torch.full((all_logits[0].shape[-1],), float("-inf"))
        mask[kept] = 0.0
    for logits, r in zip(all_logits, records):
        tgt = torch.tensor(r["target_token_ids"])
        if mask is not None:
            logits = logits + mask
        lp = F.log_softmax(logits.double(), dim=-1).gather(1, tgt[:, None]).squeeze(1)
        finite = torch.isfinite(lp)
        n += len(tgt)
        n_cov += int(finite.sum())
        nll_cov -= float(lp[finite].sum())
        nll = float("inf") if not bool(finite.all()) else nll - float(lp.sum())
    ppl = math.exp(nll / n) if math.isfinite(nll) else float("inf")
    ppl_cov = math.exp(nll_cov / max(n_cov, 1))
    return ppl, ppl_cov, n_cov / n


def window_sweep(model, records, windows, native, device):
    rows, first = [], None
    for w in windows:
        set_window(model, w)
        logits = record_logprobs(model, records, device)
        if first is None:
            first = logits
        elif w < native and all(torch.equal(a, b) for a, b in zip(first, logits)):
            raise RuntimeError(f"sliding window {w} gave the same logits as {windows[0]}")
        ppl, _, _ = ppl_from_logits(logits, records)
        rows.append({"window": w, "ppl": round(ppl, 4)})
    set_window(model, native)
    return rows


def keepset_sweep(model, records, order, sizes, native, device):
    set_window(model, native)
    logits = record_logprobs(model, records, device)
    rows = []
    for n in sizes:
        kept = torch.tensor(order[:n]) if n else None
        ppl, ppl_cov, cov = ppl_from_logits(logits, records, kept)
        rows.append({"keepset": n, "coverage": round(cov, 5),
                     "ppl": None if math.isinf(ppl) else round(ppl, 4),
                     "ppl_covered": round(ppl_cov, 4)})
    return rows


# ---------------------------------------------------------------- acceptance


@torch.no_grad()
def greedy(model, prompt_ids, new_tokens, device):
    ids = torch.tensor([prompt_ids], device=device)
    out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False,
                         max_new_tokens=new_tokens, min_new_tokens=new_tokens, pad_token_id=0)
    return out[0, len(prompt_ids):].tolist()


@torch.no_grad()
def hf_assisted(target, assistant, prompts, new_tokens, draft_tokens, device, log, on_row=None):
    """transformers' assisted generation: tokens per target forward for each draft count."""
    calls = {"target": 0, "assistant": 0}

    def counter(name):
        def hook(*_):
            calls[name] += 1
        return hook

    hooks = [target.register_forward_pre_hook(counter("target")),
             assistant.register_forward_pre_hook(counter("assistant"))]
    rows = []
    refs = [greedy(target, p, new_tokens, device) for p in prompts]
    try:
        for k in draft_tokens:
            assistant.generation_config.num_assistant_tokens = k
            assistant.generation_config.num_assistant_tokens_schedule = "constant"
            produced, forwards, drafts, same = 0, 0, 0, 0
            t0 = time.time()
            for p, ref in zip(prompts, refs):
                calls["target"] = calls["assistant"] = 0
                ids = torch.tensor([p], device=device)
                out = target.generate(
                    input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False,
                    max_new_tokens=new_tokens, min_new_tokens=new_tokens, pad_token_id=0,
                    assistant_model=assistant, num_assistant_tokens=k,
                    num_assistant_tokens_schedule="constant",
                )
                gen = out[0, len(p):].tolist()
                same += int(gen == ref)
                produced += len(gen) - 1  # the first token comes from the prefill forward
                forwards += calls["target"] - 1
                drafts += calls["assistant"]
            rows.append({"draft_tokens": k,
                         "tokens_per_target_forward": round(produced / max(forwards, 1), 3),
                         "drafter_calls_per_target_forward": round(drafts / max(forwards, 1), 2),
                         "identical_to_greedy": f"{same}/{len(prompts)}",
                         "seconds": round(time.time() - t0, 1)})
            log(f"hf assisted k={k}: {rows[-1]}")
            if on_row is not None:
                on_row(rows)
    finally:
        for h in hooks:
            h.remove()
    return rows


@torch.no_grad()
def chain_acceptance(target, assistant, seqs, starts, steps, top_ks, device):
    """Exact accepted-draft counts for every anchor of the target's own greedy sequences.

    Drafting stops at the first wrong token, so the chain the drafter really runs equals the
    teacher-forced one up to that point: for each anchor p the number of accepted drafts with
    k draft tokens is min(k, L_p), L_p the count of leading correct steps. Every anchor of
    the generated part is scored at once, for each cluster budget top_k in top_ks (the
    masked head exactly as Gemma4AssistantMaskedEmbedder computes it).
    Returns {top_k: LongTensor of L_p over all anchors}."""
    from .assistant import drafter_masks, drafter_step, target_features

    emb = target.get_input_embeddings()
    me = assistant.masked_embedding
    C = me.num_centroids
    groups = me.token_ordering.long().view(C, -1)
    head = assistant.lm_head.weight
    result = {t: [] for t in top_ks}
    for seq, start in zip(seqs, starts):
        ids = torch.tensor([seq], device=device)
        T = ids.shape[1]
        hi = T - 1 - steps
        masks = drafter_masks(T, target.config.sliding_window, device)
        hidden, skv = target_features(target, ids)
        prev = torch.cat([hidden[:, :1], hidden[:, :-1]], dim=1)
        pos = torch.arange(T, device=device)[None]
        correct = {t: [] for t in top_ks}
        for j in range(steps):
            h, proj = drafter_step(assistant, emb(torch.roll(ids, -j, dims=1)), prev, pos, masks, skv)
            hs = h[0, start:hi]
            label = torch.roll(ids, -(j + 1), dims=1)[0, start:hi]
            logits = (hs @ head.T).float()
            cl = me.centroids(hs).float()
            for t in top_ks:
                members = groups[cl.topk(t, dim=-1).indices].reshape(hs.shape[0], -1)
                pick = members.gather(1, logits.gather(1, members).argmax(-1, keepdim=True))
                correct[t].append(pick.squeeze(1) == label)
            prev = proj
        for t in top_ks:
            ok = torch.stack(correct[t], dim=1).long()
            result[t].append(torch.cumprod(ok, dim=1).sum(1).cpu())
    return {t: torch.cat(v) for t, v in result.items()}


def acceptance_table(lengths, max_k):
    """Mean accept length (accepted drafts + the target's own token) for k = 1..max_k."""
    return [{"draft_tokens": k,
             "mean_accept_len": round(1 + float(torch.clamp(lengths, max=k).float().mean()), 3)}
            for k in range(1, max_k + 1)]
