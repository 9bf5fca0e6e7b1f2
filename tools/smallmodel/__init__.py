"""smallmodel: the pieces of tools/train_small_model.py (corpus, tokenizer, target, assistant,
evaluation sets, evaluation). Only brown.py and evalsets.py run without torch."""
