"""layouts.py: the target's layer layouts by name (target.py says what each is for), without
torch, so that train_small_model.py can offer them as --layout choices in commands that run
where torch is not installed (prepare, select)."""

SLIDING, FULL = "sliding_attention", "full_attention"

LAYOUTS = {
    "late-full": [SLIDING] * 5 + [FULL, SLIDING, FULL],
    "first-full": [FULL] + [SLIDING] * 7,
}
