#!/usr/bin/env python3
"""make_assistant_fixtures.py: golden fixtures for the C drafter (engine/assistant.c).

Builds a random-init Gemma4AssistantForCausalLM (model_type gemma4_assistant) over the fixture
target tests/engine/fixtures/a_ple_kvshare, saves it as a Hugging Face folder, and writes
golden.json beside it: for several prompts, what transformers 5.17's drafter proposes and
scores, driven exactly as SinglePositionMultiTokenCandidateGenerator.get_candidates drives it
right after the target's prefill:

    target(prompt) -> next token t, hidden_states[-1], shared_kv_states (cropped to len+1)
    step 0 input:  cat([target_embed(t), hidden_states[-1][:, -1:]]), position_ids = [[len]]
    step j+1:      cat([target_embed(d_j), outputs.last_hidden_state]), same position_ids
    d_j = outputs.logits.argmax(-1)

for several centroid_intermediate_top_k values (the knob CENTROID_TOP_K), and with the plain
tied head (use_ordered_embeddings off). When models/gemma4-tiny-assistant exists, the same is
recorded for the shipped small model's assistant over its target (fixture assistant_tiny,
golden.json only: the weights stay in models/).

The assistant is random but not tiny-valued: weights ~ N(0, 1/fan_in), norm weights around 1,
random layer_scalar, a random token_ordering permutation and random centroids, so that logits
have real margins. Numerics as tools/make_fixtures.py: both models are loaded back from their
saved (bf16) folders with dtype=float32 and eager attention, the target's embedding scale
rounded to bf16 as a bf16 run rounds it. Each step records the top-2 margin of the drafter's
scores so the C test knows which argmaxes are robust to fp32 summation order.

Run (GPU machine or anywhere with transformers 5.17 and torch; CPU is enough):
  python3 tools/make_assistant_fixtures.py OUTDIR
which writes OUTDIR/assistant_fixtures.tar.gz holding assistant_a/ (and assistant_tiny/).
"""

import json
import os
import sys
import tarfile

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET_A = os.path.join(ROOT, "tests/engine/fixtures/a_ple_kvshare")
TINY_T = os.path.join(ROOT, "models/gemma4-tiny")
TINY_A = os.path.join(ROOT, "models/gemma4-tiny-assistant")
STEPS = 8


def round_embed_scales(model, dtype):
    for mod in model.modules():
        if type(mod).__name__ == "Gemma4TextScaledWordEmbedding":
            mod.embed_scale.fill_(float(torch.tensor(mod.scalar_embed_scale).to(dtype).float()))


def make_random_assistant(target_dir, out_dir, seed):
    from transformers import Gemma4AssistantConfig, Gemma4AssistantForCausalLM, Gemma4TextConfig

    tcfg = json.load(open(os.path.join(target_dir, "config.json")))
    text = Gemma4TextConfig(
        vocab_size=tcfg["vocab_size"],
        hidden_size=48,
        intermediate_size=96,
        num_hidden_layers=3,
        num_attention_heads=4,
        num_key_value_heads=tcfg["num_key_value_heads"],
        head_dim=tcfg["head_dim"],
        global_head_dim=32,
        hidden_activation="gelu_pytorch_tanh",
        max_position_embeddings=tcfg["max_position_embeddings"],
        rms_norm_eps=1e-6,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=2,
        tie_word_embeddings=True,
        sliding_window=8,
        layer_types=["sliding_attention", "full_attention", "full_attention"],
        rope_parameters=tcfg["rope_parameters"],
        final_logit_softcapping=None,
        vocab_size_per_layer_input=0,
        hidden_size_per_layer_input=0,
        attention_k_eq_v=False,
        num_kv_shared_layers=3,
        use_double_wide_mlp=False,
        enable_moe_block=False,
    )
    cfg = Gemma4AssistantConfig(
        text_config=text,
        backbone_hidden_size=tcfg["hidden_size"],
        use_ordered_embeddings=True,
        num_centroids=16,
        centroid_intermediate_top_k=4,
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    model = Gemma4AssistantForCausalLM(cfg).float()
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.ndim == 2:
                p.copy_(torch.randn(p.shape, generator=gen) / p.shape[1] ** 0.5)
            else:
                p.copy_(1.0 + 0.3 * torch.randn(p.shape, generator=gen))
        for name, b in model.named_buffers():
            if name.endswith("layer_scalar"):
                b.copy_(0.6 + 0.6 * torch.rand(b.shape, generator=gen))
        perm = torch.randperm(cfg.text_config.vocab_size, generator=gen)
        model.masked_embedding.token_ordering.copy_(perm)
    model.to(torch.bfloat16).save_pretrained(out_dir)
    return out_dir


def load_pair(target_dir, assistant_dir):
    from transformers import AutoConfig, Gemma4AssistantForCausalLM, Gemma4ForCausalLM

    target = Gemma4ForCausalLM.from_pretrained(
        target_dir, dtype=torch.float32, attn_implementation="eager"
    ).eval()
    round_embed_scales(target, torch.bfloat16)
    assistant = Gemma4AssistantForCausalLM.from_pretrained(
        assistant_dir, dtype=torch.float32, attn_implementation="eager"
    ).eval()
    return target, assistant


@torch.no_grad()
def draft(target, assistant, prompt, top_k, ordered):
    """The candidate generator's first drafting round after the prefill of `prompt`."""
    me = assistant.masked_embedding
    saved = (assistant.config.use_ordered_embeddings, me.centroid_intermediate_top_k if me else None)
    assistant.config.use_ordered_embeddings = ordered
    if me is not None:
        me.centroid_intermediate_top_k = top_k
    ids = torch.tensor([prompt])
    out = target(input_ids=ids, use_cache=False, output_hidden_states=True,
                 return_shared_kv_states=True)
    skv = getattr(out, "shared_kv_states", None)
    if not skv:  # older spelling: the text model fills a dict handed to it
        skv = {}
        target.model(input_ids=ids, use_cache=False, shared_kv_states=skv)
    skv = dict(skv)
    t = int(out.logits[0, -1].argmax())
    hs = out.hidden_states[-1]
    final_norm = bool(torch.equal(hs, target.model(input_ids=ids, use_cache=False).last_hidden_state))
    input_ids = torch.tensor([prompt + [t]])
    L = input_ids.shape[1]
    skv = {k: (v[0][:, :, :L, :], v[1][:, :, :L, :]) for k, v in skv.items()}
    last_hidden = hs[:, -1:]
    last_tok = input_ids[:, -1:]
    pos = torch.tensor([[L - 1]])
    emb = target.get_input_embeddings()
    steps = []
    for _ in range(STEPS):
        x = torch.cat([emb(last_tok), last_hidden], dim=-1)
        o = assistant(inputs_embeds=x, attention_mask=torch.ones_like(input_ids),
                      position_ids=pos, shared_kv_states=skv, use_cache=False)
        logits = o.logits[0, -1]
        tok = int(logits.argmax())
        if ordered:
            sel = torch.nonzero(logits > logits.min()).flatten()  # everything but the mask value
        else:
            sel = torch.arange(logits.shape[0])
        vals = logits[sel]
        top2 = torch.topk(vals, 2).values
        n_sel = int(sel.shape[0])
        if n_sel > 256:  # keep the 256 best scores (the golden stays small on a big vocabulary)
            best = torch.topk(vals, 256).indices.sort().values
            sel, vals = sel[best], vals[best]
        steps.append({
            "token": tok,
            "margin": float(top2[0] - top2[1]),
            "n_selected": n_sel,
            "ids": [int(i) for i in sel],
            "logits": [float(v) for v in vals],
            "projected": [float(v) for v in o.last_hidden_state[0, -1]],
        })
        last_tok = torch.tensor([[tok]])
        last_hidden = o.last_hidden_state
    assistant.config.use_ordered_embeddings = saved[0]
    if me is not None:
        me.centroid_intermediate_top_k = saved[1]
    return {"prompt": prompt, "first_token": t, "top_k": top_k if ordered else 0,
            "ordered": ordered, "hidden_is_final_norm": final_norm,
            "target_hidden": [float(v) for v in hs[0, -1]], "steps": steps}


def goldens(target_dir, assistant_dir, prompts, top_ks, note):
    target, assistant = load_pair(target_dir, assistant_dir)
    cases = []
    for p in prompts:
        for k in top_ks:
            cases.append(draft(target, assistant, p, k, True))
        cases.append(draft(target, assistant, p, 0, False))
    return {"note": note, "steps": STEPS, "cases": cases}


def main():
    import transformers

    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/assistant_fixtures"
    work = "/tmp/assistant_fixtures_work"
    os.makedirs(work, exist_ok=True)
    print("transformers", transformers.__version__, "torch", torch.__version__, flush=True)

    a_dir = make_random_assistant(TARGET_A, os.path.join(work, "assistant_a"), seed=5)
    gen = torch.Generator().manual_seed(11)
    V = json.load(open(os.path.join(TARGET_A, "config.json")))["vocab_size"]
    prompts = [[2] + torch.randint(3, V, (n,), generator=gen).tolist() for n in (5, 11, 23, 40)]
    g = goldens(TARGET_A, a_dir, prompts, [1, 4, 16],
                "random assistant over ../a_ple_kvshare; transformers " + transformers.__version__)
    g["target"] = "../a_ple_kvshare"
    json.dump(g, open(os.path.join(a_dir, "golden.json"), "w"))
    print("assistant_a: final-norm hidden:", g["cases"][0]["hidden_is_final_norm"],
          "margins:", [round(min(s["margin"] for s in c["steps"]), 4) for c in g["cases"]], flush=True)
    names = ["assistant_a"]

    if os.path.isdir(TINY_A) and os.path.isdir(TINY_T):
        cfg = json.load(open(os.path.join(TINY_A, "config.json")))
        tiny_prompts = []
        pf = os.path.join(TINY_T, "eval/prompts_tune.jsonl")
        for line in open(pf):
            if line.strip():
                r = json.loads(line)
                if "prompt_token_ids" in r:
                    tiny_prompts.append(r["prompt_token_ids"][:48])
            if len(tiny_prompts) == 3:
                break
        C = cfg.get("num_centroids", 2048)
        ks = sorted({1, cfg.get("centroid_intermediate_top_k", 32), C})
        d = os.path.join(work, "assistant_tiny")
        os.makedirs(d, exist_ok=True)
        g = goldens(TINY_T, TINY_A, tiny_prompts, ks, "models/gemma4-tiny-assistant")
        g["target"] = "../../../../models/gemma4-tiny"
        g["assistant"] = "../../../../models/gemma4-tiny-assistant"
        json.dump(g, open(os.path.join(d, "golden.json"), "w"))
        names.append("assistant_tiny")
        print("assistant_tiny written", flush=True)
    else:
        print("no models/gemma4-tiny-assistant: only assistant_a", flush=True)

    with tarfile.open(os.path.join(out, "assistant_fixtures.tar.gz"), "w:gz") as tar:
        for n in names:
            tar.add(os.path.join(work, n), arcname=n)
    print("wrote", os.path.join(out, "assistant_fixtures.tar.gz"), flush=True)


if __name__ == "__main__":
    main()
