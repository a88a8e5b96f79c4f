"""A distilled student against its teacher, on held-out Wikipedia sentences, in one run:

    python benchmarks/distil_compare.py --student runs/distil-minilm-L3-wiki-10min     # teacher: minilm

- agreement: the mean cosine between the student's and the teacher's embedding of each sentence, and the
  nearest-neighbour agreement (the share of sentences whose nearest other sentence, by cosine, is the same
  under both models); the same two numbers for the *undistilled* student (the teacher's layers copied, no
  training), so the table shows what the distillation itself added;
- speed: sentences per second of both (minibert's SentenceEncoder: tokenize, batch, forward, mean-pool), the
  rounds alternating so a busy machine slows both alike; best round of each, and the ratio.

The sentences come from the documents the wiki corpus holds out (minibert.data.corpus.split_documents, the same
split every `minibert distill` / `pretrain` run holds out), so the student never trained on them.
"""

import argparse
import json
import os
import time
from pathlib import Path


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--student", required=True, help="the distillation run folder (or a student model folder)")
    p.add_argument("--teacher", default="minilm", help="the teacher (default minilm)")
    p.add_argument("--sentences", type=int, default=500, help="held-out sentences (default 500)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--rounds", type=int, default=3, help="timed rounds per model, alternating (default 3)")
    p.add_argument("--threads", type=int, default=int(os.environ.get("OPENBLAS_NUM_THREADS", 1)),
                   help="BLAS threads (default: OPENBLAS_NUM_THREADS or 1)")
    return p.parse_args()


args = parse_args()
os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = str(args.threads)

import numpy as np  # noqa: E402

from minibert.data.corpus import load_corpus, split_documents  # noqa: E402
from minibert.distill.student import default_teacher_layers, load_teacher, student_from_teacher  # noqa: E402
from minibert.embeddings import SentenceEncoder  # noqa: E402
from minibert.finetune.model_source import resolve_model  # noqa: E402


def held_out_sentences(n):
    corpus = load_corpus(["wiki"])
    _, eval_ids = split_documents(corpus, 0.02)
    out = [s for d in sorted(eval_ids) for s in corpus.documents[d] if 20 <= len(s) <= 300]
    return out[:n]


def agreement(student, teacher):
    """(mean cosine of matching rows, share of rows whose nearest other row is the same) of two (N, H) sets of
    L2-normalised embeddings."""
    cos = float(np.mean(np.sum(student * teacher, axis=1)))
    nearest = []
    for e in (student, teacher):
        sims = e @ e.T  # (N, N)
        np.fill_diagonal(sims, -np.inf)
        nearest.append(sims.argmax(axis=1))
    return cos, float(np.mean(nearest[0] == nearest[1]))


def timed(encoder, texts):
    t = time.perf_counter()
    encoder.encode(texts, batch_size=args.batch_size)
    return time.perf_counter() - t


texts = held_out_sentences(args.sentences)
teacher = SentenceEncoder.from_pretrained(args.teacher)
student = SentenceEncoder.from_pretrained(args.student, max_length=teacher.max_length)
layers = None
settings_file = Path(args.student) / "settings.json"
if settings_file.is_file():
    layers = json.loads(settings_file.read_text())["teacher_layers"]
teacher_folder, _ = resolve_model(args.teacher)
bare_teacher = load_teacher(teacher_folder, mlm_head=False)
layers = layers or default_teacher_layers(bare_teacher.config.num_hidden_layers, student.model.config.num_hidden_layers)
undistilled = SentenceEncoder(student_from_teacher(bare_teacher, layers, mlm_head=False), teacher.tokenizer,
                              max_length=teacher.max_length)

e_teacher, e_student, e_init = (m.encode(texts, batch_size=args.batch_size) for m in (teacher, student, undistilled))
print(f"{len(texts)} held-out wiki sentences; teacher {args.teacher} ({teacher.model.config.num_hidden_layers} "
      f"layers), student {args.student} ({student.model.config.num_hidden_layers} layers from teacher layers "
      f"{layers}); {args.threads} BLAS thread(s)")
print(f"{'':34s} {'mean cosine':>12s} {'same nearest neighbour':>24s}")
for name, e in (("distilled student vs teacher", e_student), ("undistilled student vs teacher", e_init)):
    cos, nn = agreement(e, e_teacher)
    print(f"{name:34s} {cos:12.4f} {nn:24.1%}")

times = {"teacher": [], "student": []}
for _ in range(args.rounds):
    for name, enc in (("teacher", teacher), ("student", student)):
        times[name].append(timed(enc, texts))
best = {k: min(v) for k, v in times.items()}
print(f"sentences/s (best of {args.rounds}): teacher {len(texts) / best['teacher']:.1f}, student "
      f"{len(texts) / best['student']:.1f}; student / teacher speed ratio {best['teacher'] / best['student']:.2f}x")
