"""assistant.py: the MTP drafter (Gemma4AssistantForCausalLM) and its training.

How transformers drives it (SinglePositionMultiTokenCandidateGenerator): after a target
forward, with the newest token x_p at position p not yet run through the target, draft step 0
feeds pre_projection([target_embed(x_p), h_{p-1}]) where h_{p-1} is the target's last hidden
state (hidden_states[-1]) at position p-1; every layer of the drafter is query-only and
attends to the target's shared KV (the last sliding and the last full layer's keys/values) of
positions < p; position_ids stay p for all draft steps. Step j+1 feeds
[target_embed(d_j), post_projection(drafter hidden of step j)], d_j its own argmax.

The head is the centroid-masked one (use_ordered_embeddings): the vocabulary is cut into
num_centroids equal clusters by balanced spherical k-means on the target's lm-head rows
(token_ordering lists the token ids cluster by cluster), a linear layer scores the clusters,
and only tokens of the top centroid_intermediate_top_k clusters are scored by the tied head.

Training mirrors that exactly, for all anchors p of a sequence at once: query p attends to
target KV at positions < p (and, on sliding layers, only the last `window` of them), the
chain is unrolled for `draft_steps` steps with teacher forcing on the token (the one the target
would accept) and the drafter's own hidden carried forward, and the loss at each step is
cross-entropy of the full tied head plus cross-entropy of the cluster scores. The sequences are
the target's own greedy continuations of training text, so every label is the token the
target's greedy decoding really produces next.
"""

import math
import time

import torch
import torch.nn.functional as F

from .layouts import FULL, SLIDING
from .target import ATTN
from .tokenizer import BOS_ID, EOS_ID, PAD_ID

# ---------------------------------------------------------------- clustering


def balanced_assign(scores, capacity):
    """Greedy balanced assignment: each token to its best cluster that still has room.
    scores: [V, C] (higher is better). Returns assign [V] long."""
    V, C = scores.shape
    order = torch.argsort(scores.reshape(-1), descending=True).cpu().numpy()
    assign = [-1] * V
    room = [capacity] * C
    left = V
    for flat in order:
        t, c = divmod(int(flat), C)
        if assign[t] < 0 and room[c] > 0:
            assign[t] = c
            room[c] -= 1
            left -= 1
            if left == 0:
                break
    return torch.tensor(assign, dtype=torch.long)


def cluster_head(head_weight, num_centroids, iters, seed):
    """Balanced spherical k-means of the head rows. Returns (token_ordering [V], centroids [C, D])."""
    W = F.normalize(head_weight.float(), dim=-1)
    V = W.shape[0]
    if V % num_centroids:
        raise ValueError(f"vocab {V} is not a multiple of num_centroids {num_centroids}")
    cap = V // num_centroids
    g = torch.Generator(device="cpu").manual_seed(seed)
    cent = W[torch.randperm(V, generator=g)[:num_centroids].to(W.device)].clone()
    for _ in range(iters):
        assign = balanced_assign(W @ cent.T, cap).to(W.device)
        cent = torch.zeros_like(cent).index_add_(0, assign, W)
        cent = F.normalize(cent, dim=-1)
    assign = balanced_assign(W @ cent.T, cap).to(W.device)
    ordering = torch.cat([torch.nonzero(assign == c).flatten() for c in range(num_centroids)])
    raw_cent = torch.zeros(num_centroids, W.shape[1], device=W.device).index_add_(
        0, assign, head_weight.float()
    ) / cap
    return ordering.cpu(), raw_cent, assign.cpu()


# ---------------------------------------------------------------- model


def assistant_config(target_cfg, num_centroids, top_k):
    from transformers import Gemma4AssistantConfig, Gemma4TextConfig

    text = Gemma4TextConfig(
        vocab_size=target_cfg.vocab_size,
        hidden_size=256,
        intermediate_size=512,
        num_hidden_layers=2,
        num_attention_heads=4,
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
        sliding_window=target_cfg.sliding_window,
        layer_types=[SLIDING, FULL],
        final_logit_softcapping=None,
        vocab_size_per_layer_input=0,
        hidden_size_per_layer_input=0,
        attention_k_eq_v=False,
        num_kv_shared_layers=2,
        use_double_wide_mlp=False,
        enable_moe_block=False,
    )
    return Gemma4AssistantConfig(
        text_config=text,
        backbone_hidden_size=target_cfg.hidden_size,
        use_ordered_embeddings=True,
        num_centroids=num_centroids,
        centroid_intermediate_top_k=top_k,
        tie_word_embeddings=True,
    )


def build_assistant(target, num_centroids, top_k, device, seed, log):
    from transformers import Gemma4AssistantForCausalLM

    cfg = assistant_config(target.config, num_centroids, top_k)
    model = Gemma4AssistantForCausalLM(cfg).to(device=device, dtype=torch.float32)
    head = target.get_output_embeddings().weight.detach().float()
    t0 = time.time()
    ordering, cent, assign = cluster_head(head, num_centroids, iters=12, seed=seed)
    log(f"assistant: balanced k-means of {head.shape[0]} head rows into {num_centroids} "
        f"clusters of {head.shape[0] // num_centroids} in {time.time() - t0:.1f}s")
    with torch.no_grad():
        model.masked_embedding.token_ordering.copy_(ordering.to(device))
        if model.lm_head.weight.shape == head.shape:
            # Same width as the target: start from the target's head (tied with the drafter's
            # own embedding table) and the cluster means as centroid scorers.
            model.lm_head.weight.copy_(head)
            model.masked_embedding.centroids.weight.copy_(cent)
    return model, assign


# ---------------------------------------------------------------- training


def drafter_masks(T, window, device):
    """Query p sees key k < p (full) and p - window <= k < p (sliding). [1, 1, T, T] bool."""
    q = torch.arange(T, device=device)[:, None]
    k = torch.arange(T, device=device)[None, :]
    full = k < q
    sliding = full & (k >= q - window)
    full[0, 0] = True  # position 0 has no past; never trained on, but keep softmax finite
    sliding[0, 0] = True
    return {FULL: full[None, None], SLIDING: sliding[None, None]}


@torch.no_grad()
def target_features(target, ids):
    """Target forward as the candidate generator sees it: hidden_states[-1] and shared KV."""
    out = target(input_ids=ids, use_cache=False, output_hidden_states=True,
                 return_shared_kv_states=True)
    skv = getattr(out, "shared_kv_states", None)
    if not skv:
        # Older spelling: the text model fills a dict passed in as shared_kv_states.
        skv = {}
        target.model(input_ids=ids, use_cache=False, shared_kv_states=skv)
    if FULL not in skv or SLIDING not in skv:
        raise RuntimeError(f"target shared KV has layer types {list(skv)}, need both")
    return out.hidden_states[-1], dict(skv)


def drafter_step(assistant, embeds, prev_hidden, position_ids, masks, skv):
    """One draft step for every query position. Returns (normed hidden, projected hidden)."""
    x = assistant.pre_projection(torch.cat([embeds, prev_hidden], dim=-1))
    out = assistant.model(
        inputs_embeds=x,
        attention_mask=masks,
        position_ids=position_ids,
        shared_kv_states=skv,
        use_cache=False,
    )
    h = out.last_hidden_state
    return h, assistant.post_projection(h)


def chain_loss(target, assistant, ids, start, steps, cluster_of, masks, step_weights):
    """Unrolled drafter loss on sequences ids [B, T]; anchors p in [start, T - 1 - steps]."""
    B, T = ids.shape
    hidden, skv = target_features(target, ids)
    emb = target.get_input_embeddings()
    pos = torch.arange(T, device=ids.device)[None].expand(B, T)
    prev = torch.cat([hidden[:, :1], hidden[:, :-1]], dim=1)  # h_{p-1} at slot p
    head = assistant.lm_head.weight
    losses, accs = [], []
    total = 0.0
    hi = T - 1 - steps
    for j in range(steps):
        tok = torch.roll(ids, -j, dims=1)  # x_{p+j} at slot p
        h, proj = drafter_step(assistant, emb(tok), prev, pos, masks, skv)
        label = torch.roll(ids, -(j + 1), dims=1)[:, start:hi]
        hs = h[:, start:hi]
        logits = (hs @ head.T).float()
        ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), label.reshape(-1))
        cl = assistant.masked_embedding.centroids(hs).float()
        ce_c = F.cross_entropy(cl.reshape(-1, cl.shape[-1]), cluster_of[label].reshape(-1))
        total = total + step_weights[j] * (ce + 0.5 * ce_c)
        losses.append(ce.item())
        accs.append((logits.argmax(-1) == label).float().mean().item())
        prev = proj
    return total / sum(step_weights), losses, accs


@torch.no_grad()
def greedy_continuations(target, prompts, new_tokens, batch_size, log):
    """The target's own greedy continuations of equal-length prompts [N, P] -> [N, P + new]."""
    target.eval()
    outs = []
    for i in range(0, len(prompts), batch_size):
        ids = prompts[i : i + batch_size]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            seq = target.generate(
                input_ids=ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=new_tokens,
                min_new_tokens=new_tokens,
                do_sample=False,
                pad_token_id=0,
            )
        outs.append(seq)
        log(f"assistant data: greedy continuations {i + len(ids)}/{len(prompts)}")
    return torch.cat(outs)


def train_assistant(target, assistant, sequences, start, cluster_of, device, budget_s, args, log):
    t0 = time.time()
    target.eval()
    for p in target.parameters():
        p.requires_grad_(False)
    params = [p for p in assistant.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=args.a_lr, betas=(0.9, 0.95), weight_decay=0.01, fused=True)
    T = sequences.shape[1]
    masks = drafter_masks(T, target.config.sliding_window, device)
    cluster_of = cluster_of.to(device)
    weights = [0.8**j for j in range(args.draft_steps)]
    gen = torch.Generator().manual_seed(args.seed + 7)
    history = []
    step, total_steps = 0, None
    assistant.train()
    while True:
        elapsed = time.time() - t0
        if step == 5:
            t5 = time.time()
        if total_steps is None and step == 15:
            rate = 10 / (time.time() - t5)
            total_steps = max(50, int(rate * (budget_s - elapsed) * 0.97) + step)
            log(f"assistant: {rate:.2f} steps/s -> {total_steps} steps")
        planned = total_steps or 10**9
        if step >= planned or elapsed > budget_s:
            break
        frac = min(1.0, step / planned)
        lr = args.a_lr * min(1.0, (step + 1) / 50) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))
        for g in opt.param_groups:
            g["lr"] = lr
        idx = torch.randint(0, len(sequences), (args.a_batch_size,), generator=gen)
        ids = sequences[idx].to(device)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss, losses, accs = chain_loss(target, assistant, ids, start, args.draft_steps,
                                            cluster_of, masks, weights)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        step += 1
        if step % 20 == 0 or step == 1:
            history.append({"step": step, "t": round(elapsed, 1),
                            "ce": [round(x, 3) for x in losses],
                            "acc": [round(x, 3) for x in accs]})
            log(f"assistant step {step}/{planned} lr {lr:.2e} ce[0] {losses[0]:.3f} "
                f"ce[-1] {losses[-1]:.3f} acc {' '.join(f'{a:.2f}' for a in accs)}")
    assistant.eval()
    return {"steps": step, "seconds": round(time.time() - t0, 1), "log": history}
