"""evalsets.py: the evaluation files shipped beside the model, and the keepset.

prompts_<set>.jsonl  one prompt per document of the set: <bos> + the document's first P tokens,
                     P drawn in [600, 1000] (seeded), as {"id", "prompt_token_ids", "text"}.
ppl_<set>.jsonl      one record per document of the set, from its second half (after the prompt
                     where the document is long enough): {"context_token_ids": <bos> + C tokens, C in [640, 896],
                     "target_token_ids": the next 128 tokens of the document}, so every target
                     token sits at a position where a 128-512 token window cuts real context.
keepset.txt          every token id, most frequent in the training tokens first (ties by id);
                     '#' lines are comments. LM_HEAD_KEEPSET=N keeps the first N ids.
Pure Python over token id lists: it runs where torch does not.
"""

import json
import random
from collections import Counter

from .tokenizer import BOS_ID

PROMPT_MIN, PROMPT_MAX = 600, 1000
CTX_MIN, CTX_MAX = 640, 896
TARGET_LEN = 128


def window_response(rows, native):
    """From a window sweep of one record set: the ppl at the native window, at 256 and at 128;
    ppl(128) / ppl(native); and whether ppl rises strictly native -> 256 -> 128 (how the
    records of models with a native window of 512 are summarised)."""
    by = {r["window"]: r["ppl"] for r in rows}
    chain = (by[native], by[256], by[128])
    return chain, chain[2] / chain[0], chain[0] < chain[1] < chain[2]


def window_range(native):
    """The tuning range of SLIDING_WINDOW for a model of this native window, largest first:
    native, native/2, native/4, native/8 (search_spaces/default.yaml tunes these levels).
    Doubling steps: the cost of a shorter window grows with the share of context it cuts,
    and between neighbouring windows a few percent apart the difference is below what 4096
    scored tokens resolve."""
    return [native >> k for k in range(4)]


def window_criterion(rows, native, min_cost=0.03):
    """From a window sweep [{"window", "ppl"}, ...] of one record set: the ppl at each point
    of the tuning range (largest window first), the cost of the smallest window
    (ppl(native/8) / ppl(native) - 1), whether the ppl rises strictly as the window shrinks
    over the range, and whether both hold with the cost at least min_cost (the small
    model's window criterion)."""
    by = {r["window"]: r["ppl"] for r in rows}
    windows = window_range(native)
    missing = [w for w in windows if w not in by]
    if missing:
        raise ValueError(f"window sweep lacks the range's windows {missing}")
    ppl = [by[w] for w in windows]
    cost = ppl[-1] / ppl[0] - 1
    monotone = all(a < b for a, b in zip(ppl, ppl[1:]))
    return {"windows": windows, "ppl": ppl, "cost": round(cost, 5), "monotone": monotone,
            "met": monotone and cost >= min_cost}


def make_sets(docs, tokenizer, split, seed):
    """Prompt and perplexity records for the documents of one split."""
    rng = random.Random(f"{seed}-{split}")
    prompts, records = [], []
    for d in sorted((d for d in docs if d["split"] == split), key=lambda d: d["id"]):
        ids = tokenizer.encode(d["text"], add_special_tokens=False).ids
        n_prompt = rng.randint(PROMPT_MIN, PROMPT_MAX) - 1  # the count includes <bos>
        n_ctx = rng.randint(CTX_MIN, CTX_MAX)
        if len(ids) < max(n_prompt, n_ctx + TARGET_LEN):
            raise ValueError(f"document {d['id']}: only {len(ids)} tokens")
        p_ids = ids[:n_prompt]
        prompts.append({
            "id": f"{d['id']}-{split}",
            "prompt_token_ids": [BOS_ID] + p_ids,
            "text": tokenizer.decode(p_ids, skip_special_tokens=False),
        })
        lo = min(max(n_prompt, len(ids) // 2), len(ids) - n_ctx - TARGET_LEN)
        start = rng.randint(lo, len(ids) - n_ctx - TARGET_LEN)
        records.append({
            "context_token_ids": [BOS_ID] + ids[start : start + n_ctx],
            "target_token_ids": ids[start + n_ctx : start + n_ctx + TARGET_LEN],
        })
    return prompts, records


def write_jsonl(rows, path):
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False, separators=(", ", ": ")) + "\n")


def read_jsonl(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise ValueError(f"{path}:{lineno}: not JSON: {e}") from None
    return rows


def keepset_order(train_ids_lists, vocab_size):
    """All ids by descending count over the training tokens (one <bos> per document), ties by id."""
    counts = Counter()
    for ids in train_ids_lists:
        counts.update(ids)
        counts[BOS_ID] += 1
    return sorted(range(vocab_size), key=lambda i: (-counts.get(i, 0), i)), counts


def write_keepset(order, counts, n_train_tokens, path):
    seen = sum(1 for i in order if counts.get(i, 0) > 0)
    with open(path, "w", encoding="utf-8") as f:
        f.write("# keepset for gemma4-tiny: token ids by descending frequency in the training split\n")
        f.write(f"# ({n_train_tokens} tokens of {seen} distinct ids; ids never seen follow, by id).\n")
        f.write("# One id per line; lines starting with '#' are comments.\n")
        f.write("# LM_HEAD_KEEPSET=N keeps the first N ids of this list.\n")
        for i in order:
            f.write(f"{i}\n")
