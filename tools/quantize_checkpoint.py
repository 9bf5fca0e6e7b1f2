#!/usr/bin/env python3
"""quantize_checkpoint.py: a bf16 Hugging Face Gemma 4 folder -> a compressed-tensors
"pack-quantized" (W4A16 / W8A16) checkpoint, for the engine's tests.

    quantize_checkpoint.py SRC DST --bits 4|8 --group 32|64|128

DST (created; it must be absent or empty) gets model.safetensors, config.json with a
quantization_config, and every other file and folder of SRC copied as is.

Quantized: the linear layers of the target decoder, q/k/v/o_proj and gate/up/down_proj of
`<prefix>layers.N.` with <prefix> "model.", "model.language_model." or
"language_model.model." (the names engine/model_load.c reads; vision and audio towers do not
match). Each `<module>.weight` [out, in] becomes, as compressed-tensors' pack_quantized.py
writes it:
    <module>.weight_packed  I32  [out, in * bits / 32]: value i of a word at bits
                                 [bits * i, bits * i + bits), stored as q + 2^(bits - 1)
    <module>.weight_scale   BF16 [out, in / group]
    <module>.weight_shape   I64  [2] = [out, in]
Everything else is copied bit for bit, and every other 2-D weight (embeddings, the per-layer
projections, lm_head) is listed in quantization_config.ignore, with "lm_head" always there.

The quantizer is engine/quant.c's, operation for operation in numpy float32 (quant.h has the
rule and why): per group, m = the first value of largest magnitude, s = bf16(m / -Q) rounded
to nearest even (0 for an all-zero group or an underflow), q = clip(rint(x / s), -Q, Q - 1)
with Q = 2^(bits - 1). The result is bit-identical to quant_from_bf16 (the checkpoint test
checks every layer).

Only python3 and numpy: safetensors is read and written directly (an 8-byte little-endian
header length, a JSON header, the raw little-endian data). Tensors are written largest
element first, so every tensor starts aligned to its element size.
"""
import argparse
import json
import os
import re
import shutil
import struct
import sys

import numpy as np

TARGET = re.compile(
    r"^(model\.|model\.language_model\.|language_model\.model\.)layers\.\d+\."
    r"(self_attn\.(q|k|v|o)_proj|mlp\.(gate|up|down)_proj)\.weight$"
)

DTYPES = {  # safetensors dtype -> (numpy dtype, size)
    "F64": ("<f8", 8), "F32": ("<f4", 4), "F16": ("<f2", 2), "BF16": ("<u2", 2),
    "I64": ("<i8", 8), "I32": ("<i4", 4), "I16": ("<i2", 2), "I8": ("i1", 1),
    "U64": ("<u8", 8), "U32": ("<u4", 4), "U16": ("<u2", 2), "U8": ("u1", 1),
    "BOOL": ("u1", 1), "F8_E4M3": ("u1", 1), "F8_E5M2": ("u1", 1),
}


class Tensor:
    """One tensor of a safetensors file: dtype, shape and its raw bytes (a memmap view)."""

    def __init__(self, dtype, shape, raw):
        self.dtype, self.shape, self.raw = dtype, list(shape), raw

    def array(self):
        return np.frombuffer(self.raw, dtype=DTYPES[self.dtype][0]).reshape(self.shape)


def read_safetensors(path):
    """{name: Tensor} of one file, checked as engine/safetensors.c checks it."""
    data = np.memmap(path, dtype=np.uint8, mode="r")
    if len(data) < 8:
        sys.exit(f"{path}: too short for a safetensors file")
    (n,) = struct.unpack("<Q", bytes(data[:8]))
    if 8 + n > len(data):
        sys.exit(f"{path}: header length {n} runs past the end of the file")
    header = json.loads(bytes(data[8:8 + n]).decode("utf-8"))
    base, out = 8 + n, {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dt, shape, (b, e) = info["dtype"], info["shape"], info["data_offsets"]
        if dt not in DTYPES:
            sys.exit(f"{path}: {name}: unknown dtype {dt}")
        if e - b != int(np.prod(shape, dtype=np.int64)) * DTYPES[dt][1] or base + e > len(data):
            sys.exit(f"{path}: {name}: data_offsets [{b}, {e}] do not fit its shape {shape}")
        out[name] = Tensor(dt, shape, data[base + b:base + e])
    return out


def read_dir(src):
    """Every tensor of a model folder: model.safetensors or the shards of its index."""
    index = os.path.join(src, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    tensors = {}
    for fn in files:
        for name, t in read_safetensors(os.path.join(src, fn)).items():
            if name in tensors:
                sys.exit(f"{src}: tensor {name} is in two shards")
            tensors[name] = t
    return tensors


def write_safetensors(path, items, metadata=None):
    """items: [(name, dtype, shape, nbytes, produce)] where produce() returns the bytes.
    Written largest element size first (then by name), the header padded with spaces to a
    multiple of 8, so every tensor starts aligned to its element size."""
    items = sorted(items, key=lambda it: (-DTYPES[it[1]][1], it[0]))
    header, off = {"__metadata__": metadata or {"format": "pt"}}, 0
    for name, dt, shape, nbytes, _ in items:
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + nbytes]}
        off += nbytes
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for name, dt, shape, nbytes, produce in items:
            raw = produce()
            if len(raw) != nbytes:
                raise AssertionError(f"{name}: produced {len(raw)} bytes, expected {nbytes}")
            f.write(raw)


def bf16_bits_to_f32(bits):
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)


def f32_to_bf16_bits(x):
    """Round to nearest even, as engine/quant.c (finite inputs)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    u = u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))
    return (u >> np.uint32(16)).astype(np.uint16)


def to_f32(t):
    a = t.array()
    if t.dtype == "BF16":
        return bf16_bits_to_f32(a)
    if t.dtype in ("F32", "F16"):
        return a.astype(np.float32)
    raise ValueError(f"dtype {t.dtype} cannot be quantized (BF16, F16 or F32 only)")


def quantize(w, bits, group):
    """w: float32 [rows, cols] -> (q int8 [rows, cols], scale bf16 bits uint16 [rows, groups])
    by engine/quant.c's rule."""
    rows, cols = w.shape
    Q = 1 << (bits - 1)
    if cols % group:
        raise ValueError(f"{cols} input columns are not a multiple of the group size {group}")
    if not np.all(np.isfinite(w)):
        r, c = np.argwhere(~np.isfinite(w))[0]
        raise ValueError(f"weight [{r}, {c}] is not finite; cannot quantize")
    g = w.reshape(rows, cols // group, group)
    a = np.abs(g)
    first = np.argmax(a, axis=2)[..., None]  # the first value of largest magnitude
    m = np.take_along_axis(g, first, axis=2)[..., 0]
    amax = np.take_along_axis(a, first, axis=2)[..., 0]
    sbits = f32_to_bf16_bits(m / np.float32(-Q))
    sbits[amax == 0] = 0
    s = bf16_bits_to_f32(sbits)
    zero = s == 0
    sbits[zero] = 0
    s = np.where(zero, np.float32(1), s).astype(np.float32)
    q = np.rint(g / s[..., None])  # one float32 division, round half to even
    q = np.clip(q, -Q, Q - 1)
    q[zero] = 0
    return q.astype(np.int8).reshape(rows, cols), sbits


def pack_int32(q, bits):
    """compressed-tensors' pack_to_int32 along the input dim: value i of a word at bits
    [bits * i, bits * i + bits), stored as q + 2^(bits - 1)."""
    rows, cols = q.shape
    per = 32 // bits
    u = (q.astype(np.int32) + (1 << (bits - 1))).astype(np.uint32).reshape(rows, cols // per, per)
    shifts = (np.arange(per, dtype=np.uint32) * np.uint32(bits))
    words = np.bitwise_or.reduce(u << shifts, axis=2).astype(np.uint32)
    return words.view(np.int32)


def quantization_config(bits, group, ignore):
    return {
        "config_groups": {
            "group_0": {
                "format": "pack-quantized",
                "input_activations": None,
                "output_activations": None,
                "targets": ["Linear"],
                "weights": {
                    "actorder": None,
                    "block_structure": None,
                    "dynamic": False,
                    "group_size": group,
                    "num_bits": bits,
                    "observer": "minmax",
                    "observer_kwargs": {},
                    "scale_dtype": None,
                    "strategy": "group",
                    "symmetric": True,
                    "type": "int",
                    "zp_dtype": None,
                },
            }
        },
        "format": "pack-quantized",
        "global_compression_ratio": None,
        "ignore": ignore,
        "kv_cache_scheme": None,
        "quant_method": "compressed-tensors",
        "quantization_status": "compressed",
        "sparsity_config": {},
        "transform_config": {},
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src", help="a Hugging Face model folder (bf16 weights)")
    ap.add_argument("dst", help="the folder to write (absent or empty)")
    ap.add_argument("--bits", type=int, choices=(4, 8), required=True)
    ap.add_argument("--group", type=int, choices=(32, 64, 128), required=True)
    args = ap.parse_args()
    src, dst = args.src, args.dst
    if os.path.realpath(src) == os.path.realpath(dst):
        sys.exit("quantize_checkpoint: SRC and DST are the same folder")
    if os.path.exists(dst) and os.listdir(dst):
        sys.exit(f"quantize_checkpoint: {dst} is not empty")
    with open(os.path.join(src, "config.json")) as f:
        config = json.load(f)
    if "quantization_config" in config:
        sys.exit(f"quantize_checkpoint: {src}/config.json already has a quantization_config")
    tensors = read_dir(src)
    os.makedirs(dst, exist_ok=True)

    items, ignore, n_layers = [], {"lm_head"}, 0
    for name, t in sorted(tensors.items()):
        if not TARGET.match(name):
            items.append((name, t.dtype, t.shape, len(t.raw), lambda t=t: bytes(t.raw)))
            if len(t.shape) == 2 and name.endswith(".weight"):
                ignore.add(name[: -len(".weight")])
            continue
        if len(t.shape) != 2:
            sys.exit(f"quantize_checkpoint: {name}: shape {t.shape} is not a matrix")
        rows, cols = t.shape
        if cols % args.group:
            sys.exit(f"quantize_checkpoint: {name}: {cols} input columns are not a multiple of "
                     f"the group size {args.group}")
        module = name[: -len(".weight")]
        cache = {}

        def result(t=t, cache=cache, name=name):
            if not cache:
                try:
                    q, s = quantize(to_f32(t), args.bits, args.group)
                except ValueError as e:
                    sys.exit(f"quantize_checkpoint: {name}: {e}")
                cache["packed"] = pack_int32(q, args.bits).astype("<i4").tobytes()
                cache["scale"] = s.astype("<u2").tobytes()
            return cache

        words = cols * args.bits // 32
        items.append((module + ".weight_packed", "I32", [rows, words], rows * words * 4,
                      lambda r=result: r().pop("packed")))
        items.append((module + ".weight_scale", "BF16", [rows, cols // args.group],
                      rows * (cols // args.group) * 2, lambda r=result: r().pop("scale")))
        items.append((module + ".weight_shape", "I64", [2], 16,
                      lambda rows=rows, cols=cols: np.array([rows, cols], "<i8").tobytes()))
        n_layers += 1
    if not n_layers:
        sys.exit(f"quantize_checkpoint: {src}: no linear layer of the decoder found")
    # Written largest element first: the I32 packed values come before their BF16 scales, so
    # each layer is quantized once (cached) and its cache emptied as its two halves are written.
    write_safetensors(os.path.join(dst, "model.safetensors"), items)

    config["quantization_config"] = quantization_config(args.bits, args.group, sorted(ignore))
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    skip = {"config.json", "model.safetensors.index.json"}
    for entry in sorted(os.listdir(src)):
        if entry in skip or entry.endswith(".safetensors"):
            continue
        s, d = os.path.join(src, entry), os.path.join(dst, entry)
        if os.path.isdir(s):
            shutil.copytree(s, d)
        else:
            shutil.copy2(s, d)
    print(f"quantize_checkpoint: {n_layers} layers -> int{args.bits} group {args.group} in {dst}")


if __name__ == "__main__":
    main()
