"""The recipe `minibert finetune` picks when flags do not say (finetune/recipe.py): learning rate and dropout by
the model's size, epochs for at least 300 optimizer steps, windows for a model of few positions and single texts;
every flag wins and is marked in the log's recipe line. And --adapt-steps (finetune/adapt.py): masked-LM training
on the task's texts before fine-tuning, refused for a model without its masked-LM head and for other tasks."""

import json
import re

import pytest

from minibert.cli import main
from minibert.config import BertConfig
from minibert.finetune.adapt import adapt
from minibert.finetune.recipe import choose_recipe, describe, epochs_for
from minibert.models.classification import BertForSequenceClassification
from minibert.tokenizer import WordPieceTokenizer
from tests.finetune.finetune_helpers import make_examples, make_model_dir, write_rows

NO_FLAGS = {"lr": None, "epochs": None, "dropout": None, "long_texts": None, "window_overlap": None}


def config(hidden, positions):
    return BertConfig(vocab_size=100, hidden_size=hidden, num_hidden_layers=2, num_attention_heads=hidden // 64,
                      intermediate_size=4 * hidden, max_position_embeddings=positions)


MINI = config(192, 64)  # the size of `minibert pretrain`'s mini
MINILM = config(384, 512)  # all-MiniLM-L6-v2's


def test_a_small_model_gets_a_high_learning_rate_dropout_and_windows():
    recipe = choose_recipe(MINI, 64, NO_FLAGS)
    assert (recipe.lr, recipe.dropout, recipe.long_texts, recipe.window_overlap) == (5e-4, 0.1, "windows", 16)
    assert recipe.epochs is None and recipe.flags == ()  # epochs wait for the number of training examples
    assert "small model (hidden size 192 <= 256)" in recipe.kind


def test_a_published_size_model_gets_berts_recipe_and_truncation():
    recipe = choose_recipe(MINILM, 128, NO_FLAGS)
    assert (recipe.lr, recipe.dropout, recipe.long_texts, recipe.epochs) == (3e-5, None, "truncate", None)
    assert "published-size model (hidden size 384 > 256)" in recipe.kind


def test_the_boundaries_of_size_and_positions():
    assert choose_recipe(config(256, 64), 64, NO_FLAGS).lr == 5e-4  # 256 is still small
    assert choose_recipe(config(320, 64), 64, NO_FLAGS).lr == 3e-5
    assert choose_recipe(config(192, 127), 127, NO_FLAGS).long_texts == "windows"
    assert choose_recipe(config(192, 128), 128, NO_FLAGS).long_texts == "truncate"


def test_pairs_are_truncated_and_qa_takes_3_epochs():
    assert choose_recipe(MINI, 64, NO_FLAGS, pairs=True).long_texts == "truncate"
    recipe = choose_recipe(MINI, 64, NO_FLAGS, "qa")
    assert (recipe.epochs, recipe.long_texts, recipe.lr) == (3, "truncate", 5e-4)


def test_a_tagger_gets_its_steps_and_on_little_data_a_higher_lr():
    # ~1,900 sentences at 3e-5 for 3 epochs (162 steps) learned to say O everywhere: the recipe gives them 300
    # steps and lr 1e-4; 14,041 sentences of one's own keep BERT's 3e-5 and 3 epochs (439 steps each)
    small = choose_recipe(MINILM, 128, NO_FLAGS, "tokens", num_train=1900)
    assert small.lr == 1e-4 and small.epochs is None and epochs_for(1900, 32) == 5
    assert "fewer than 5,000 sentences" in small.kind
    large = choose_recipe(MINILM, 128, NO_FLAGS, "tokens", num_train=14041)
    assert large.lr == 3e-5 and epochs_for(14041, 32) == 3
    assert choose_recipe(MINI, 64, NO_FLAGS, "tokens", num_train=100).lr == 5e-4  # a small model: its own lr
    assert choose_recipe(MINILM, 128, {**NO_FLAGS, "lr": 2e-5}, "tokens", num_train=100).lr == 2e-5


def test_a_tasks_learning_rate_is_a_published_size_models_only():
    # stsb measured MiniLM at 1e-4 (tasks.py); the mini keeps its 5e-4, and --lr still wins
    task = choose_recipe(MINILM, 128, NO_FLAGS, "regression", pairs=True, published_lr=1e-4)
    assert task.lr == 1e-4 and "with the task's lr 0.0001" in task.kind and task.flags == ()
    assert choose_recipe(MINI, 64, NO_FLAGS, "regression", pairs=True, published_lr=1e-4).lr == 5e-4
    flagged = choose_recipe(MINILM, 128, {**NO_FLAGS, "lr": 2e-5}, "regression", pairs=True, published_lr=1e-4)
    assert flagged.lr == 2e-5 and "task's lr" not in flagged.kind
    # a tagger on little data takes the higher of the two
    assert choose_recipe(MINILM, 128, NO_FLAGS, "tokens", num_train=100, published_lr=5e-5).lr == 1e-4
    assert choose_recipe(MINILM, 128, NO_FLAGS, "tokens", num_train=14041, published_lr=5e-5).lr == 5e-5


def test_the_real_tasks_give_minilm_their_measured_learning_rate():
    import argparse

    from minibert.commands.finetune import add_arguments
    from minibert.commands.finetune_setup import setup_training, take_task_defaults

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    for argv, num_train, expected in (
            (["--task", "stsb", "--model", "minilm"], 5749, (1e-4, 8)),
            (["--task", "stsb", "--model", "minilm", "--lr", "3e-5"], 5749, (3e-5, 8)),
            (["--task", "conll2003", "--model", "minilm"], 14041, (1e-4, 4)),
            (["--task", "conll2003", "--model", "minilm", "--epochs", "2"], 14041, (1e-4, 2)),
            (["--task", "imdb", "--model", "minilm"], 1600, (1e-4, 2)),
            (["--task-type", "tokens", "--model", "minilm", "--train", "x.conll"], 14041, (3e-5, 3))):
        args = parser.parse_args(argv)
        if args.task:
            take_task_defaults(args)
        settings = setup_training(args, args.task_type, num_train)[3]
        assert (settings.lr, settings.epochs) == expected, argv


def test_a_task_chooses_how_a_long_model_reads_long_texts_and_a_short_one_reads_windows():
    assert choose_recipe(MINILM, 256, NO_FLAGS, long_model_texts="head-tail").long_texts == "head-tail"
    assert choose_recipe(MINI, 64, NO_FLAGS, long_model_texts="head-tail").long_texts == "windows"
    assert choose_recipe(MINILM, 256, NO_FLAGS, pairs=True, long_model_texts="head-tail").long_texts == "truncate"
    assert choose_recipe(MINILM, 256, NO_FLAGS, "tokens", long_model_texts="head-tail").long_texts == "truncate"
    flagged = choose_recipe(MINI, 64, {**NO_FLAGS, "long_texts": "head-tail"}, long_model_texts="head-tail")
    assert (flagged.long_texts, flagged.flags) == ("head-tail", ("long_texts",))


def test_imdb_reads_reviews_as_head_and_tail_for_minilm_and_as_windows_for_a_model_of_few_positions(tmp_path):
    import argparse

    from minibert.commands.finetune import add_arguments
    from minibert.commands.finetune_setup import setup_training, take_task_defaults

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    small = make_model_dir(tmp_path / "model")  # 32 positions
    for argv, expected in ((["--model", "minilm"], ("head-tail", 256)), (["--model", str(small)], ("windows", 32)),
                           (["--model", str(small), "--long-texts", "head-tail"], ("head-tail", 32))):
        args = parser.parse_args(["--task", "imdb", *argv])
        take_task_defaults(args)
        settings = setup_training(args, args.task_type, 1600)[3]
        assert (settings.long_texts, settings.max_length) == expected, argv
        assert settings.recipe_flags == (("long_texts",) if "--long-texts" in argv else ()), argv


def test_flags_win_and_are_listed():
    given = {**NO_FLAGS, "lr": 1e-4, "epochs": 7, "long_texts": "truncate"}
    recipe = choose_recipe(MINI, 64, given)
    assert (recipe.lr, recipe.epochs, recipe.long_texts, recipe.dropout) == (1e-4, 7, "truncate", 0.1)
    assert recipe.flags == ("lr", "epochs", "long_texts")
    recipe = choose_recipe(MINILM, 128, {**NO_FLAGS, "dropout": 0.0, "long_texts": "windows"})
    assert (recipe.dropout, recipe.long_texts, recipe.flags) == (0.0, "windows", ("dropout", "long_texts"))


def test_the_recipe_line_marks_the_values_flags_gave():
    recipe = choose_recipe(MINILM, 128, {**NO_FLAGS, "epochs": 4})
    line = describe(recipe, recipe.kind, recipe.flags)
    assert line.startswith("recipe: published-size model")
    assert line.endswith("lr 3e-05, 4 epochs (flag), dropout of the checkpoint, long texts truncated")


@pytest.mark.parametrize("examples,batch_size,epochs", [
    (541, 32, 18),  # 17 steps an epoch: 18 epochs reach 300 steps
    (7225, 32, 3),  # 226 steps an epoch: never fewer than 3 epochs
    (5, 32, 20),  # one step an epoch: never more than 20
    (9600, 32, 3), (9632, 32, 3),
    (480, 32, 20),  # 15 steps an epoch: 20 epochs are 300 steps exactly
    (481, 32, 19),  # 16 steps an epoch: 19 epochs are 304 steps
    (0, 32, 20),
])
def test_epochs_give_at_least_300_steps_between_3_and_20_epochs(examples, batch_size, epochs):
    assert epochs_for(examples, batch_size) == epochs


# ---- through the command line, on the tiny fixture model (hidden size 32, 32 positions: the small recipe)

def _recipe_line(text):
    lines = [line for line in text.splitlines() if line.startswith("recipe: ")]
    assert len(lines) == 1, text
    return lines[0]


def test_the_log_and_metrics_json_hold_the_values_used_and_mark_the_flags(tmp_path, capsys):
    model = make_model_dir(tmp_path / "model")
    train = write_rows(tmp_path / "train.csv", make_examples(40, seed=1))
    common = ["finetune", "--model", str(model), "--train", train, "--procs", "1", "--no-progress"]
    assert main([*common, "--out", str(tmp_path / "flags"), "--epochs", "2", "--long-texts", "truncate",
                 "--dropout", "0"]) == 0
    line = _recipe_line(capsys.readouterr().out)
    assert line == ("recipe: small model (hidden size 32 <= 256): lr 0.0005, 2 epochs (flag), dropout 0.0 (flag), "
                    "long texts truncated (flag) (docs/finetuning.md; flags override)")
    settings = json.loads((tmp_path / "flags" / "metrics.json").read_text())["settings"]
    assert (settings["lr"], settings["epochs"], settings["dropout"], settings["long_texts"]) == (5e-4, 2, 0.0,
                                                                                                 "truncate")
    assert settings["recipe_flags"] == ["dropout", "epochs", "long_texts"]

    # no flags: 36 training texts (40 less the eval split) are 2 steps an epoch at --batch-size 32: 20 epochs
    assert main([*common, "--out", str(tmp_path / "recipe"), "--lr", "1e-3"]) == 0
    out = capsys.readouterr().out
    assert "dropout 0.1 (the recipe)" in out
    assert _recipe_line(out) == ("recipe: small model (hidden size 32 <= 256): lr 0.001 (flag), 20 epochs, dropout "
                                 "0.1, long texts as windows sharing 8 tokens (docs/finetuning.md; flags override)")
    summary = json.loads((tmp_path / "recipe" / "metrics.json").read_text())
    settings = summary["settings"]
    assert (settings["lr"], settings["epochs"], settings["dropout"], settings["long_texts"],
            settings["window_overlap"]) == (1e-3, 20, 0.1, "windows", 8)
    assert len(summary["history"]) == 20
    recorded = json.loads((tmp_path / "recipe" / "config.json").read_text())
    assert recorded["hidden_dropout_prob"] == 0.1 and recorded["finetuning"]["long_texts"] == "windows"


def test_a_tagger_takes_the_epochs_of_300_steps_and_the_small_models_lr_and_dropout(tmp_path, capsys):
    from minibert.finetune import synthetic
    from tests.finetune.heads_helpers import make_tiny_model_dir
    synthetic.write_conll(tmp_path / "train.conll", *synthetic.ner_sentences(12, seed=0, part="train"))
    assert main(["finetune", "--task-type", "tokens", "--model", str(make_tiny_model_dir(tmp_path / "model")),
                 "--train", str(tmp_path / "train.conll"), "--out", str(tmp_path / "out"), "--procs", "1",
                 "--no-progress"]) == 0
    line = _recipe_line(capsys.readouterr().out)
    # 11 training sentences are one step an epoch: the most epochs, 20
    assert line.endswith("lr 0.0005, 20 epochs, dropout 0.1, long texts truncated (docs/finetuning.md; flags override)")
    settings = json.loads((tmp_path / "out" / "metrics.json").read_text())["settings"]
    assert (settings["lr"], settings["epochs"], settings["dropout"], settings["long_texts"]) == (5e-4, 20, 0.1,
                                                                                                 "truncate")


@pytest.mark.parametrize("flag,value,message", [
    ("--epochs", "0", "--epochs must be at least 1, got 0"),  # not replaced by the recipe's epochs
    ("--batch-size", "0", "--batch-size must be at least 1, got 0"),  # the recipe's epochs divide by it
    ("--lr", "0", "--lr must be positive, got 0.0"),
])
def test_a_flag_the_recipe_cannot_use_is_one_line_before_training(tmp_path, capsys, flag, value, message):
    model = make_model_dir(tmp_path / "model")
    train = write_rows(tmp_path / "train.csv", make_examples(30, seed=1))
    assert main(["finetune", "--model", str(model), "--train", train, flag, value, "--out", str(tmp_path / "out"),
                 "--procs", "1", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err == f"minibert finetune: error: {message}\n"
    assert not (tmp_path / "out" / "model.safetensors").exists()


# ---- --adapt-steps

def test_adapt_steps_needs_a_masked_lm_head_and_says_so_before_training(tmp_path, capsys):
    model = make_model_dir(tmp_path / "model")
    classifier = tmp_path / "classifier"  # a fine-tuned classifier keeps no masked-LM head
    BertForSequenceClassification(BertConfig.from_json_file(model), num_labels=3).save_pretrained(classifier)
    WordPieceTokenizer.from_pretrained(model).save_pretrained(classifier)
    train = write_rows(tmp_path / "train.csv", make_examples(30, seed=1))
    out = tmp_path / "out"
    assert main(["finetune", "--model", str(classifier), "--train", train, "--adapt-steps", "5", "--epochs", "1",
                 "--out", str(out), "--procs", "1", "--no-progress"]) == 2
    captured = capsys.readouterr()
    error = captured.err.strip().splitlines()
    assert len(error) == 1 and error[0].startswith("minibert finetune: error: --adapt-steps: ")
    assert "no masked-LM head" in error[0] and "drop --adapt-steps" in error[0]
    assert "adapting" not in captured.out and not (out / "model.safetensors").exists()


def test_adapt_steps_is_for_text_classification_only(tmp_path, capsys):
    from minibert.finetune import synthetic
    synthetic.write_conll(tmp_path / "train.conll", *synthetic.ner_sentences(10, seed=0, part="train"))
    assert main(["finetune", "--task-type", "tokens", "--model", str(make_model_dir(tmp_path / "model")),
                 "--train", str(tmp_path / "train.conll"), "--adapt-steps", "5", "--out", str(tmp_path / "out"),
                 "--procs", "1", "--no-progress"]) == 2
    assert "--adapt-steps applies to text classification only, not to --task-type tokens" in capsys.readouterr().err


def _losses(lines):
    """(first tenth, last tenth) mean masked-LM losses from adapt's log."""
    found = [re.search(r"masked-LM loss on the task's texts: ([\d.]+) in the first tenth of the steps, ([\d.]+) in "
                       r"the last", line) for line in lines]
    (match,) = [m for m in found if m]
    return float(match.group(1)), float(match.group(2))


def test_adapting_lowers_the_masked_lm_loss_on_the_tasks_texts(tmp_path):
    model = make_model_dir(tmp_path / "model")
    tokenizer = WordPieceTokenizer.from_pretrained(model)
    texts = ["the cat sits on the house", "a dog runs under the tree", "the big blue house"] * 20
    lines = []
    out = adapt(model, tokenizer, texts, max_length=16, steps=60, lr=2e-3, out=tmp_path / "adapted", batch_size=16,
                log=lines.append, progress=False)
    first, last = _losses(lines)
    assert last < first - 0.5, lines
    assert lines[0].startswith("adapting to the task's texts: 60 masked-LM steps of 16 windows (60 windows of 60 texts")
    assert (out / "model.safetensors").exists() and (out / "vocab.txt").exists()
    from safetensors import safe_open
    with safe_open(str(out / "model.safetensors"), "np") as f:  # the head is kept: adapting again is possible
        assert "cls.predictions.transform.dense.weight" in f.keys()


def test_finetune_with_adapt_steps_adapts_then_fine_tunes(tmp_path, capsys):
    model = make_model_dir(tmp_path / "model")
    train = write_rows(tmp_path / "train.csv", make_examples(40, seed=1))
    out = tmp_path / "out"
    assert main(["finetune", "--model", str(model), "--train", train, "--adapt-steps", "8", "--adapt-lr", "1e-3",
                 "--epochs", "1", "--long-texts", "truncate", "--out", str(out), "--procs", "1", "--no-progress"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("adapting to the task's texts: 8 masked-LM steps") for line in lines)
    _losses(lines)
    assert (out / "model.safetensors").exists() and (out / "metrics.json").exists()
    assert json.loads((out / "config.json").read_text())["architectures"] == ["BertForSequenceClassification"]
