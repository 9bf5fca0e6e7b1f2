#!/usr/bin/env python3
"""make_quant_golden.py: goldens for the engine's quantized weights, made by the reference.

For a fixture folder that make_fixtures.py wrote (config.json, safetensors, golden.json), and for
each precision asked (int4 / int8 with a group), loads the model in transformers in fp32 as
make_fixtures.py does, replaces every q/k/v/o/gate/up/down projection of every layer with its
dequantized copy (q * s, exact in fp32) by tools/quantize_checkpoint.py's quantizer - the rule
of engine/quant.c, bit for bit - and writes golden_<dtype>_g<group>.json beside golden.json:
the same input ids, logit positions, greedy continuation and perplexity records, for the
native window, computed in fp32 on the dequantized weights with eager attention.
tests/engine/test_golden.c loads the folder with WEIGHT_DTYPE / WEIGHT_GROUP and compares.

  python3 tools/make_quant_golden.py FIXTURE_DIR int4:32 int8:32 ...
"""
import json
import os
import sys

import numpy as np
import torch
from transformers import Gemma4ForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_fixtures  # noqa: E402  (golden_case, round_embed_scales, the shapes)
from quantize_checkpoint import bf16_bits_to_f32, quantize  # noqa: E402

PROJ = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
        "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")


def dequantize_layers(model, bits, group):
    n = 0
    for i, layer in enumerate(model.model.layers):
        for path in PROJ:
            mod = layer
            for part in path.split("."):
                mod = getattr(mod, part, None)
                if mod is None:
                    break
            if mod is None:
                continue
            w = mod.weight.detach().float().numpy()
            q, sbits = quantize(w, bits, group)
            s = bf16_bits_to_f32(sbits)
            rows, cols = w.shape
            dq = (q.astype(np.float32).reshape(rows, cols // group, group) * s[..., None])
            mod.weight.data = torch.from_numpy(dq.reshape(rows, cols).astype(np.float32))
            n += 1
    return n


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    folder = sys.argv[1]
    golden = json.load(open(os.path.join(folder, "golden.json")))
    prompt = [json.loads(l) for l in open(os.path.join(folder, "prompts.jsonl"))][0]
    prompt = prompt["prompt_token_ids"]
    dtype = {"bfloat16": torch.bfloat16, "float16": torch.float16}[golden["weights_dtype"]]
    native = golden["cases"][0]["sliding_window"]
    for spec in sys.argv[2:]:
        name, group = spec.split(":")
        bits, group = {"int4": 4, "int8": 8}[name], int(group)
        ref = Gemma4ForCausalLM.from_pretrained(folder, dtype=torch.float32,
                                                attn_implementation="eager").eval()
        make_fixtures.round_embed_scales(ref, dtype)
        n = dequantize_layers(ref, bits, group)
        case = make_fixtures.golden_case(ref, native, golden["input_ids"], prompt,
                                         golden["ppl_records"])
        out = {"model": golden["model"], "precision": {"weight_dtype": name, "weight_group": group},
               "quantized_matrices": n, "transformers_version": make_fixtures.transformers.__version__,
               "compute": "fp32 math on the dequantized weights (tools/quantize_checkpoint.py's "
               "rule), eager attention, embedding scales rounded to the weight dtype",
               "input_ids": golden["input_ids"], "logit_positions": golden["logit_positions"],
               "ppl_records": golden["ppl_records"], "cases": [case]}
        path = os.path.join(folder, f"golden_{name}_g{group}.json")
        with open(path, "w") as f:
            json.dump(out, f, separators=(",", ":"))
        print(f"{path}: {n} matrices, ppl {case['ppl']:.6f}, "
              f"greedy {case['greedy']['new_tokens'][:8]}...", flush=True)


if __name__ == "__main__":
    main()
