"""Which data each rank of `minibert finetune --procs N` tokenizes: rank 0 evaluates and tests, so it tokenizes
the training, eval and test data; the other ranks only train, so they tokenize the training data alone (and
their training is the same: tests/finetune/test_finetune_procs.py)."""

import argparse
from types import SimpleNamespace

import pytest

import minibert.finetune.qa_features as qa_features
import minibert.finetune.tagging as tagging
import minibert.finetune.train as train_module
import minibert.finetune.windows as windows_module
from finetune_helpers import make_examples, make_model_dir, write_rows
from heads_helpers import make_tiny_model_dir
from minibert.commands import finetune
from minibert.commands.finetune_qa import run_qa
from minibert.commands.finetune_tokens import run_tokens
from minibert.finetune import synthetic


class TrainingStarts(Exception):
    """Raised in place of training: what was tokenized by then is what the rank holds while it trains."""


def parse(argv):
    parser = argparse.ArgumentParser()
    finetune.add_arguments(parser)
    return parser.parse_args([*map(str, argv), "--no-progress", "--procs", "2"])


def _sequence_args(tmp_path, long_texts):
    write_rows(tmp_path / "train.csv", make_examples(40, seed=1))
    write_rows(tmp_path / "eval.csv", make_examples(12, seed=2))
    write_rows(tmp_path / "test.csv", make_examples(9, seed=3))
    return ["--model", make_model_dir(tmp_path / "model"), "--train", tmp_path / "train.csv",
            "--eval", tmp_path / "eval.csv", "--test", tmp_path / "test.csv", "--long-texts", long_texts]


def sequence_run(tmp_path):
    args = _sequence_args(tmp_path, "truncate")
    return finetune._run_sequence, args, (train_module, "encode_examples"), "train_classifier"


def sequence_windows_run(tmp_path):  # texts read as windows tokenize through encode_windows instead
    args = _sequence_args(tmp_path, "windows")
    return finetune._run_sequence, args, (windows_module, "encode_windows"), "train_classifier"


def tokens_run(tmp_path):
    synthetic.write_conll(tmp_path / "train.conll", *synthetic.ner_sentences(40, seed=0, part="train"))
    synthetic.write_tagged_jsonl(tmp_path / "eval.jsonl", *synthetic.ner_sentences(12, seed=1, part="train"))
    synthetic.write_tagged_jsonl(tmp_path / "test.jsonl", *synthetic.ner_sentences(9, seed=2, part="train"))
    args = ["--task-type", "tokens", "--model", make_tiny_model_dir(tmp_path / "model"),
            "--train", tmp_path / "train.conll", "--eval", tmp_path / "eval.jsonl", "--test", tmp_path / "test.jsonl"]
    return run_tokens, args, (tagging, "encode_tagged"), "fit"


def qa_run(tmp_path):
    for name, n, seed in (("train", 10, 0), ("eval", 4, 1), ("test", 3, 2)):
        synthetic.write_squad(tmp_path / f"{name}.json", synthetic.qa_paragraphs(n, seed=seed, part="train"), "1.1")
    args = ["--task-type", "qa", "--model", make_tiny_model_dir(tmp_path / "model"), "--train",
            tmp_path / "train.json", "--eval", tmp_path / "eval.json", "--test", tmp_path / "test.json"]
    return run_qa, args, (qa_features, "build_windows"), "fit"


@pytest.mark.parametrize("make_run", [sequence_run, sequence_windows_run, tokens_run, qa_run],
                         ids=["sequence", "sequence-windows", "tokens", "qa"])
def test_only_rank_0_tokenizes_the_eval_and_test_data(tmp_path, monkeypatch, make_run):
    # run: the command's function for its ranks; (module, encode_name): the function that tokenizes one data set,
    # encode(tokenizer, data, ...); loop_name: the training loop in finetune/train.py that the command calls.
    run, argv, (module, encode_name), loop_name = make_run(tmp_path)
    encoded_sizes = []  # the number of examples (sentences, questions) of every data set tokenized
    encode = getattr(module, encode_name)

    def spy(tokenizer, data, *args, **kwargs):
        encoded_sizes.append(len(data))
        return encode(tokenizer, data, *args, **kwargs)

    def no_training(*args, **kwargs):
        raise TrainingStarts

    monkeypatch.setattr(module, encode_name, spy)
    monkeypatch.setattr(train_module, loop_name, no_training)
    sizes = {}
    for rank in (0, 1):
        encoded_sizes.clear()
        args = parse([*argv, "--out", tmp_path / f"out{rank}"])
        with pytest.raises(TrainingStarts):
            run(args, SimpleNamespace(rank=rank, size=2, is_root=rank == 0))
        sizes[rank] = list(encoded_sizes)
    train, eval_, test = sizes[0]  # rank 0: all three, the training data first
    assert train > eval_ > test > 0
    assert sizes[1] == [train]
