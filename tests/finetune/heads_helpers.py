"""Fixtures of the token classification and QA fine-tuning tests: a tiny BERT whose vocabulary holds every word
of the generated data sets (so that nothing is [UNK]), and the paths of the hand-written files."""

from pathlib import Path

from minibert.config import BertConfig
from minibert.finetune import synthetic
from minibert.models.pretraining import BertForPreTraining
from minibert.tokenizer import WordPieceTokenizer

FIXTURES = Path(__file__).parent / "fixtures"
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def synthetic_vocabulary() -> list[str]:
    words = set()
    for pool in (synthetic.FIRST, synthetic.LAST, synthetic.CITIES, synthetic.ORGS, synthetic.YEARS,
                 synthetic.NER_TEMPLATES, [f[0] + " " + f[1] for f in synthetic.FACTS]):
        for item in pool:
            words.update(item.lower().replace("?", " ? ").replace(".", " . ").replace(",", " , ").split())
    words = {w for w in words if not w.startswith("{")} | {"?", ".", ","}
    return SPECIALS + sorted(words)


def make_tiny_model_dir(path, seed=0, max_position_embeddings=64):
    tokenizer = WordPieceTokenizer(synthetic_vocabulary())
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=max_position_embeddings)
    BertForPreTraining(config, seed=seed).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def run_cli_json(argv) -> dict:
    """Run `minibert ARGV --json` (outside a test's capsys, e.g. in a module fixture) and parse its stdout."""
    import io
    import json
    import sys

    import pytest

    from minibert.cli import main
    with pytest.MonkeyPatch.context() as mp:
        buffer = io.StringIO()
        mp.setattr(sys, "stdout", buffer)
        assert main(argv + ["--json", "--no-progress"]) == 0
    return json.loads(buffer.getvalue())
