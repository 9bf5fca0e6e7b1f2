"""augment.py: copy augmentation of training windows (optional, off by default).

A fraction of training windows get one span of their own text repeated 128-480 tokens later,
so that looking far back (beyond a 128-token window, inside the native 512) pays during
training and the copy circuits that make long context useful can form before a small model
overfits a small corpus. Natural held-out text is still what every figure is measured on.
Pure Python over token id lists.
"""


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
