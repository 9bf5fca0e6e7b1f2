"""make_e4b_random.py: a Gemma 4 text model with google/gemma-4-E4B's dimensions and random
bf16 weights, for the GPU benchmark (bench/bench_gpu.sh). Nothing is downloaded: the
model is built from a config with transformers on the GPU and saved to local disk.

    python3 tools/make_e4b_random.py OUTDIR [--prompts 3] [--prompt-len 256] [--hf-new-tokens 64]
                                            [--mid] [--mlp WIDTH]

writes
    OUTDIR/model/            config.json (model_type gemma4_text) + model.safetensors (bf16)
    OUTDIR/prompts.jsonl     prompts of --prompt-len random token ids (the engine's JSONL format)
    OUTDIR/hf.json           transformers' own greedy decode speed on the same model and GPU

Dimensions are google/gemma-4-E4B's: hidden 2560, MLP 10240, 42 layers of which 7 are full
attention (every sixth, the last one included), 8 query heads, 2 KV heads, head_dim 256 on
sliding and 512 on full layers, the last 18 layers sharing KV, per-layer embeddings of width
256, vocabulary 262144 with a tied head, native window 512, final softcap 30. What these
do not fix we take from Gemma 3n-style defaults and say so: RoPE theta 10000 (sliding) and
1e6 proportional with partial factor 0.25 (full), no k == v, no double-wide MLP. Only the sizes
matter here: the benchmark measures bytes moved, not what the model says. --mlp WIDTH gives
every layer an MLP of that width instead of 10240, everything else E4B's: a layer with more
bytes and the same dependencies, to measure how the share of the floor grows with the bytes a
layer streams (docs/bench_gpu.md).

transformers' decode speed: model.generate (greedy, its default cache, sdpa attention) on one
prompt; decode tokens/s = (N - 1) / (time of an N-token generate - time of a 1-token generate),
i.e. prefill excluded. N is small (default 64; the HF path is slow, and tokens/s settles within
a few dozen steps); the engine itself decodes 512 tokens per prompt.
"""

import argparse
import json
import os
import time

import torch
import transformers
from transformers import Gemma4ForCausalLM
from transformers.models.gemma4.configuration_gemma4 import Gemma4TextConfig


def e4b_config(mid=False, mlp=None):
    # mid: the same structure at a size a CPU checks in seconds (tests/kernels/cuda_ops model),
    # hidden 512 and MLP 2048 - shapes kernels/mlp.cu takes on sm_90 (hidden a multiple of 256,
    # at least 8 MLP rows a multiprocessor) - 8 layers, every fourth full, the last 2 sharing KV
    # (each with an earlier layer of its type), vocabulary 4096.
    n_layers = 8 if mid else 42
    every = 4 if mid else 6
    layer_types = ["full_attention" if (i + 1) % every == 0 else "sliding_attention" for i in range(n_layers)]
    vocab = 4096 if mid else 262144
    return Gemma4TextConfig(
        vocab_size=vocab,
        hidden_size=512 if mid else 2560,
        intermediate_size=mlp or (2048 if mid else 10240),
        num_hidden_layers=n_layers,
        num_attention_heads=8,
        num_key_value_heads=2,
        head_dim=64 if mid else 256,
        global_head_dim=128 if mid else 512,
        max_position_embeddings=131072,
        sliding_window=512,
        layer_types=layer_types,
        rope_parameters={
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            "full_attention": {
                "rope_type": "proportional",
                "partial_rotary_factor": 0.25,
                "rope_theta": 1000000.0,
            },
        },
        final_logit_softcapping=30.0,
        vocab_size_per_layer_input=vocab,
        hidden_size_per_layer_input=64 if mid else 256,
        attention_k_eq_v=False,
        num_kv_shared_layers=2 if mid else 18,
        use_double_wide_mlp=False,
        tie_word_embeddings=True,
        rms_norm_eps=1e-6,
    )


def timed_generate(model, ids, n):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = model.generate(ids, max_new_tokens=n, min_new_tokens=n, do_sample=False)
    torch.cuda.synchronize()
    assert out.shape[1] == ids.shape[1] + n, out.shape
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--prompts", type=int, default=3)
    ap.add_argument("--prompt-len", type=int, default=256)
    ap.add_argument("--hf-new-tokens", type=int, default=64)
    ap.add_argument("--seed", type=int, default=4)
    ap.add_argument("--mid", action="store_true", help="the small structural twin (e4b_config)")
    ap.add_argument("--mlp", type=int, default=None, help="MLP width instead of the default")
    a = ap.parse_args()
    print("transformers", transformers.__version__, "torch", torch.__version__, flush=True)
    torch.set_grad_enabled(False)
    torch.manual_seed(a.seed)

    if a.mlp is not None and a.mlp <= 0:
        ap.error(f"--mlp {a.mlp}: the MLP width must be positive")
    cfg = e4b_config(a.mid, a.mlp)
    t0 = time.time()
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        model = Gemma4ForCausalLM(cfg).eval()
    torch.set_default_dtype(torch.float32)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"built on {torch.cuda.get_device_name()}: {n_params / 1e9:.2f} B parameters, "
          f"{time.time() - t0:.1f} s", flush=True)

    folder = os.path.join(a.outdir, "model")
    t0 = time.time()
    model.save_pretrained(folder, max_shard_size="64GB")
    print(f"saved to {folder} in {time.time() - t0:.1f} s: {sorted(os.listdir(folder))}", flush=True)

    gen = torch.Generator().manual_seed(a.seed)
    prompts = [torch.randint(0, cfg.vocab_size, (a.prompt_len,), generator=gen).tolist()
               for _ in range(a.prompts)]
    with open(os.path.join(a.outdir, "prompts.jsonl"), "w") as f:
        for i, p in enumerate(prompts):
            f.write(json.dumps({"id": f"e4b-random-{i}", "prompt_token_ids": p}) + "\n")

    ids = torch.tensor([prompts[0]], device="cuda")
    timed_generate(model, ids, 4)  # warm-up
    n = a.hf_new_tokens
    t_n = timed_generate(model, ids, n)
    t_1 = timed_generate(model, ids, 1)
    res = {
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(),
        "attn_implementation": model.config._attn_implementation,
        "prompt_tokens": a.prompt_len,
        "new_tokens": n,
        "generate_s": t_n,
        "prefill_plus_one_s": t_1,
        "decode_tps": (n - 1) / (t_n - t_1),
        "e2e_tps": n / t_n,
        "parameters": n_params,
    }
    print("hf:", json.dumps(res), flush=True)
    with open(os.path.join(a.outdir, "hf.json"), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
