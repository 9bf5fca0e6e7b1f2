"""augment.py: augmentations of the training text that make long context pay (off by default).

A small model on a small corpus learns the corpus's names by heart instead of reading them from
the context: a held-out document's names are new, so what it needs there is to copy them from
earlier in the document, and a window that no longer reaches the earlier mention costs
perplexity (the knob the tuner turns). Two augmentations push training towards that skill:

  copy_augment     a share of training windows get one span of their own text repeated 128-480
                   tokens later (token level);
  repeat_augment   a share of training windows are one block of their own text, 128-480 tokens
                   long, repeated to fill the window: from the second copy on every token can be
                   read from one block-length back, the strongest signal for a copy (induction)
                   circuit to form in the few million tokens a small model trains on (token level);
  rename_entities  a training document's proper nouns (tagged np in the Brown corpus) are
                   renamed consistently, each to a random proper noun of the training set, in
                   fresh renamed copies of the document (text level, before tokenization): the
                   n-th mention of a renamed name can only be predicted from the earlier ones.

Natural held-out text is still what every figure is measured on. Pure Python.
"""

import re


def copy_augment(ids, rng, min_gap=128, max_gap=480, min_len=16, max_len=64, keep=1):
    """ids with ids[b:b+n] = ids[a:a+n] for one random a < b, b - a in [min_gap, max_gap].
    The first `keep` ids (the <bos>) are never touched. Returns a new list."""
    out = list(ids)
    n = rng.randint(min_len, max_len)
    gap = rng.randint(min_gap, max_gap)
    if len(out) - keep < gap + n:
        return out
    a = rng.randint(keep, len(out) - gap - n)
    b = a + gap
    out[b : b + n] = out[a : a + n]
    return out


def repeat_augment(ids, rng, min_len=128, max_len=480, keep=1):
    """ids[:keep] followed by ids[keep:keep+L] repeated to the length of ids, L random in
    [min_len, max_len]. Returns a new list."""
    L = rng.randint(min_len, max_len)
    block = list(ids[keep : keep + L])
    if len(block) < L:
        return list(ids)
    body = block * (-(-(len(ids) - keep) // L))
    return list(ids[:keep]) + body[: len(ids) - keep]


def rename_entities(text, names, pool, rng):
    """text with every whole-word, case-sensitive occurrence of each of `names` replaced by one
    name drawn for it from `pool` (a list), the same replacement throughout the text."""
    if not names:
        return text
    mapping = {n: rng.choice(pool) for n in names}
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(names, key=len, reverse=True))) + r")\b")
    return pattern.sub(lambda m: mapping[m.group(1)], text)
