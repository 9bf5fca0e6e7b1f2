"""tokenizer.py: a Gemma-style BPE tokenizer.json trained on the training documents.

Shape of the file, taken from Gemma 3's tokenizer.json so that code written for the real
tokenizer reads ours unchanged:
  normalizer      Replace " " -> "\u2581" (the space marker)
  pre_tokenizer   Split on " " MergedWithPrevious (a no-op after the normalizer, as in Gemma 3)
  model           BPE, byte_fallback true, fuse_unk true, unk "<unk>", merges as [a, b] pairs
  post_processor  TemplateProcessing: "<bos>" (id 2) before every sequence
  decoder         Replace "\u2581" -> " ", ByteFallback, Fuse
  ids             0 <pad>, 1 <eos>, 2 <bos>, 3 <unk>, 4..259 the byte tokens <0x00>..<0xFF>,
                  then the learned alphabet and merges, padded with <unusedN> to vocab_size.

Training uses a pre-tokenizer that only the trainer sees: split before every space marker and
isolate newlines. So no learned merge crosses a word boundary or touches a newline, and the
shipped tokenizer (which splits nothing) encodes exactly as the trainer's split would; the
build checks that on sample text.
"""

import json

SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>"]
PAD_ID, EOS_ID, BOS_ID, UNK_ID = 0, 1, 2, 3
SPACE = "\u2581"


def _added_token(i, content):
    return {
        "id": i,
        "content": content,
        "single_word": False,
        "lstrip": False,
        "rstrip": False,
        "normalized": False,
        "special": True,
    }


def tokenizer_json(vocab_tokens, merges):
    """The tokenizer.json document for the given id-ordered tokens and [a, b] merges."""
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [_added_token(i, s) for i, s in enumerate(SPECIALS)],
        "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": SPACE},
        "pre_tokenizer": {
            "type": "Split",
            "pattern": {"String": " "},
            "behavior": "MergedWithPrevious",
            "invert": False,
        },
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [
                {"SpecialToken": {"id": "<bos>", "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
            ],
            "pair": [
                {"SpecialToken": {"id": "<bos>", "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": "<bos>", "type_id": 1}},
                {"Sequence": {"id": "B", "type_id": 1}},
            ],
            "special_tokens": {"<bos>": {"id": "<bos>", "ids": [BOS_ID], "tokens": ["<bos>"]}},
        },
        "decoder": {
            "type": "Sequence",
            "decoders": [
                {"type": "Replace", "pattern": {"String": SPACE}, "content": " "},
                {"type": "ByteFallback"},
                {"type": "Fuse"},
            ],
        },
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": "<unk>",
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": True,
            "byte_fallback": True,
            "ignore_merges": False,
            "vocab": {tok: i for i, tok in enumerate(vocab_tokens)},
            "merges": [list(m) for m in merges],
        },
    }


def train_tokenizer(texts, vocab_size):
    """Train BPE on texts; return (tokenizers.Tokenizer as shipped, its JSON dict)."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    n_bytes = 256
    trainer_tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    trainer_tok.normalizer = normalizers.Replace(" ", SPACE)
    trainer_tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(SPACE, behavior="merged_with_next"),
            pre_tokenizers.Split("\n", behavior="isolated"),
        ]
    )
    trainer_tok.decoder = decoders.Sequence(
        [decoders.Replace(SPACE, " "), decoders.ByteFallback(), decoders.Fuse()]
    )
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - n_bytes,
        special_tokens=list(SPECIALS),
        min_frequency=2,
        show_progress=False,
    )
    trainer_tok.train_from_iterator(texts, trainer=trainer)

    learned = json.loads(trainer_tok.to_str())["model"]
    by_id = sorted(learned["vocab"].items(), key=lambda kv: kv[1])
    body = [tok for tok, _ in by_id if tok not in SPECIALS]
    byte_tokens = [f"<0x{b:02X}>" for b in range(n_bytes)]
    body = [t for t in body if t not in set(byte_tokens)]
    vocab_tokens = list(SPECIALS) + byte_tokens + body
    if len(vocab_tokens) > vocab_size:
        raise RuntimeError(f"trainer produced {len(vocab_tokens)} tokens > {vocab_size}")
    n_unused = vocab_size - len(vocab_tokens)
    vocab_tokens += [f"<unused{i}>" for i in range(n_unused)]
    merges = [m.split(" ", 1) if isinstance(m, str) else m for m in learned["merges"]]

    doc = tokenizer_json(vocab_tokens, merges)
    shipped = Tokenizer.from_str(json.dumps(doc))

    # The shipped tokenizer must encode like the trainer's split did, and round-trip.
    for text in texts[:40]:
        sample = text[:4000]
        a = shipped.encode(sample, add_special_tokens=False).tokens
        b = trainer_tok.encode(sample, add_special_tokens=False).tokens
        if a != b:
            raise RuntimeError("shipped tokenizer encodes differently from the trainer's split")
        ids = shipped.encode(sample, add_special_tokens=False).ids
        if UNK_ID in ids:
            raise RuntimeError("<unk> in training text: byte fallback did not cover it")
        back = shipped.decode(ids, skip_special_tokens=False)
        if back != sample:
            raise RuntimeError(f"round trip failed: {sample[:80]!r} -> {back[:80]!r}")
    with_bos = shipped.encode("The jury said.").ids
    if with_bos[0] != BOS_ID:
        raise RuntimeError("post_processor did not prepend <bos>")
    return shipped, doc, n_unused
