"""Hugging Face's tokenizer files, read and written: what `WordPieceTokenizer.from_pretrained` and
`save_pretrained` (wordpiece.py) do with a folder.

A folder may hold vocab.txt (one token per line, its id the line number), tokenizer_config.json (the settings and
special tokens' names), tokenizer.json (the `tokenizers` library's whole pipeline: normaliser, vocabulary,
post-processor) and, from older transformers versions, special_tokens_map.json and added_tokens.json.
transformers reads tokenizer.json when it is there, so minibert writes it too (the same JSON BertTokenizerFast
writes) and refuses a folder whose vocab.txt and tokenizer.json disagree. Tokens added beyond the vocabulary, which
Hugging Face splits off the text whole, are refused rather than silently ignored.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import numpy as np

from minibert.io.atomic import atomic_write_text
from minibert.tokenizer.vocab_io import LINE_END_SPACE, decode_utf8, read_vocab, write_vocab

VERY_LARGE_INTEGER = int(1e30)  # transformers' model_max_length for "no limit" (written as 1e30 by some tools)
# Files transformers reads besides tokenizer.json and tokenizer_config.json: a saved tokenizer replaces them
STALE_FILES = ("added_tokens.json", "special_tokens_map.json")


def write_tokenizer_folder(tok, directory: str | os.PathLike) -> None:
    """Write vocab.txt, tokenizer.json and tokenizer_config.json: the folder loads here, in transformers'
    `BertTokenizerFast.from_pretrained` and in `tokenizers.Tokenizer.from_file(".../tokenizer.json")`, with the
    same ids. A tokenizer already in the folder is replaced whole: its added_tokens.json and
    special_tokens_map.json, which transformers would read too, are removed."""
    bad = next((t for t in tok.ids_to_tokens if t != t.rstrip(LINE_END_SPACE)), None)
    if bad is not None:
        raise ValueError(f"token {bad!r} ends in white space, which vocab.txt cannot keep: readers (Hugging "
                         f"Face's, minibert's) remove it")
    if tok.max_input_chars_per_word != 100:
        warnings.warn(f"max_input_chars_per_word={tok.max_input_chars_per_word} is saved in tokenizer.json, "
                      "which tokenizers.Tokenizer.from_file and transformers' PreTrainedTokenizerFast follow; "
                      "transformers 5's BertTokenizerFast (and AutoTokenizer) always use 100", stacklevel=3)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    write_vocab(directory / "vocab.txt", tok.ids_to_tokens)
    atomic_write_text(directory / "tokenizer.json", json.dumps(tokenizer_json(tok), indent=2,
                                                               ensure_ascii=False))
    config = {
        "tokenizer_class": "BertTokenizer",
        "do_lower_case": tok.do_lower_case,
        "strip_accents": tok.strip_accents,
        "tokenize_chinese_chars": tok.tokenize_chinese_chars,
        "model_max_length": tok.model_max_length,
        "max_input_chars_per_word": tok.max_input_chars_per_word,
        "unk_token": tok.unk_token, "pad_token": tok.pad_token, "cls_token": tok.cls_token,
        "sep_token": tok.sep_token, "mask_token": tok.mask_token,
    }
    atomic_write_text(directory / "tokenizer_config.json", json.dumps(config, indent=2) + "\n")
    for name in STALE_FILES:
        (directory / name).unlink(missing_ok=True)


def tokenizer_json(tok) -> dict:
    """A WordPieceTokenizer in the `tokenizers` library's format (tokenizer.json): the same JSON as transformers'
    BertTokenizerFast saves for this vocabulary and these settings."""
    specials = sorted({tok.vocab[t]: t for t in tok.all_special_tokens}.items())
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": True} for i, t in specials]
    post_processor = None  # (without [CLS] and [SEP] nothing is added; minibert's encode refuses to add them)
    if tok.cls_token_id is not None and tok.sep_token_id is not None:
        cls, sep = ({"SpecialToken": {"id": token, "type_id": 0}} for token in (tok.cls_token, tok.sep_token))
        sep_b = {"SpecialToken": {"id": tok.sep_token, "type_id": 1}}
        a, b = {"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}
        post_processor = {
            "type": "TemplateProcessing", "single": [cls, a, sep], "pair": [cls, a, sep, b, sep_b],
            "special_tokens": {t: {"id": t, "ids": [tok.vocab[t]], "tokens": [t]}
                               for t in sorted({tok.cls_token, tok.sep_token})}}
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "BertNormalizer", "clean_text": True,
                       "handle_chinese_chars": tok.tokenize_chinese_chars, "strip_accents": tok.strip_accents,
                       "lowercase": tok.do_lower_case},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": post_processor,
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": tok.unk_token, "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": tok.max_input_chars_per_word, "vocab": dict(tok.vocab)},
    }


def read_tokenizer_folder(path: Path) -> tuple[list[str], dict, list[tuple[Path, str, int | None, dict]]]:
    """(vocabulary, WordPieceTokenizer's keyword arguments, added tokens) from a folder with vocab.txt
    (+ tokenizer_config.json) and/or tokenizer.json, or from a vocab.txt file. The added tokens are (file, token,
    its id if given, its flags), for check_added_tokens once the tokenizer is built."""
    added: list[tuple[Path, str, int | None, dict]] = []  # (file, token, its id if given, its flags)
    if path.is_file():  # a vocab.txt given directly
        vocab, config = read_vocab(path), {}
    else:
        config_file, fast_file, vocab_file = (path / name for name in
                                               ("tokenizer_config.json", "tokenizer.json", "vocab.txt"))
        config = _lengths_checked(_read_json(config_file), config_file) if config_file.exists() else {}
        fast_vocab = None
        if fast_file.exists():  # its normaliser settings count, unless tokenizer_config.json says otherwise
            try:
                fast_vocab, fast_config, fast_added = _read_tokenizer_json(fast_file)
            except ValueError:
                if not vocab_file.exists():
                    raise
            else:
                config = {**{k: v for k, v in fast_config.items() if v is not None}, **config}
                added += [(fast_file, t.get("content"), t.get("id"), t) for t in fast_added]
        vocab = read_vocab(vocab_file) if vocab_file.exists() else fast_vocab
        if fast_vocab is not None and vocab != fast_vocab:
            at = next((i for i, (a, b) in enumerate(zip(vocab, fast_vocab)) if a != b), len(vocab))
            raise ValueError(f"{path}: vocab.txt and tokenizer.json hold different vocabularies ({len(vocab)} and "
                             f"{len(fast_vocab)} tokens, the first difference at id {at}); Hugging Face reads "
                             f"tokenizer.json: delete the file that does not belong with the model")
        config, more = _older_special_files(path, config, config_file)
        added += more
    kwargs = {}
    for key in ("do_lower_case", "strip_accents", "tokenize_chinese_chars", "model_max_length",
                "max_input_chars_per_word"):
        if config.get(key) is not None:
            kwargs[key] = config[key]
    for key in ("unk_token", "pad_token", "cls_token", "sep_token", "mask_token"):
        value = config.get(key)
        if isinstance(value, dict):  # newer configs store {"content": "[UNK]", ...}
            value = value.get("content")
        if isinstance(value, str):
            kwargs[key] = value
    return vocab, kwargs, added


def check_added_tokens(tok, added: list[tuple[Path, str, int | None, dict]], names: tuple[str, ...]) -> None:
    """Refuse added tokens (Hugging Face's add_tokens, additional special tokens) other than the five special
    tokens at their vocabulary ids: Hugging Face splits them off the text whole (lowercased or not, stripping
    spaces around them or not, as their flags say), which minibert does not do. names: the special tokens the
    files name (not the tokenizer's: a keyword of from_pretrained that picks another token for a role leaves the
    files' own special tokens what they were)."""
    flags = ("single_word", "lstrip", "rstrip", "normalized")
    bad: dict[Path, list[str]] = {}
    for file, token, i, entry in added:
        on = [f for f in flags if entry.get(f)]
        if (not isinstance(token, str) or token not in names or token not in tok.vocab
                or i not in (None, tok.vocab[token]) or on):
            shown = repr(token) + (f" ({', '.join(on)})" if on and token in names else "")
            bad.setdefault(file, []).append(shown)
    if bad:
        file, tokens = next(iter(bad.items()))
        more = f" and {len(tokens) - 3} more" if len(tokens) > 3 else ""
        raise ValueError(f"{file}: added tokens {', '.join(tokens[:3])}{more}, which Hugging Face splits off "
                         f"the text whole, are not supported: minibert reads the vocabulary and the special "
                         f"tokens {', '.join(dict.fromkeys(names))} at their ids in it")


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(decode_utf8(path.read_bytes(), path))
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return data


def _read_tokenizer_json(path: Path) -> tuple[list[str], dict, list[dict]]:
    """Vocabulary, normaliser settings and added tokens from a Hugging Face `tokenizer.json` with a WordPiece
    model."""
    data = _read_json(path)
    model = data.get("model") or {}
    if model.get("type") != "WordPiece" or not isinstance(model.get("vocab"), dict):
        raise ValueError(f"{path}: expected a WordPiece model with a vocab")
    by_id = sorted(model["vocab"].items(), key=lambda kv: kv[1])
    if [i for _, i in by_id] != list(range(len(by_id))):
        raise ValueError(f"{path}: vocabulary ids are not 0..{len(by_id) - 1}")
    config = _lengths_checked({"unk_token": model.get("unk_token"),
                               "max_input_chars_per_word": model.get("max_input_chars_per_word")}, path)
    norm = data.get("normalizer") or {}
    if norm.get("type") == "BertNormalizer":
        config.update(do_lower_case=norm.get("lowercase"), strip_accents=norm.get("strip_accents"),
                      tokenize_chinese_chars=norm.get("handle_chinese_chars"))
    added = [t if isinstance(t, dict) else {"content": t} for t in data.get("added_tokens") or []]
    return [token for token, _ in by_id], config, added


def _older_special_files(folder: Path, config: dict, config_file: Path) -> tuple[dict, list]:
    """What transformers also reads besides tokenizer.json: the special tokens' names in special_tokens_map.json
    (they win over tokenizer_config.json's), and added tokens listed there, in added_tokens.json and in
    tokenizer_config.json. Returns the config with those names and the added tokens as check_added_tokens takes
    them."""
    added = [(config_file, t.get("content"), int(i), t) for i, t in (config.get("added_tokens_decoder") or {}).items()
             if isinstance(t, dict) and str(i).isdigit()]
    sources = [(config_file, config)]
    special_map = folder / "special_tokens_map.json"
    if special_map.exists():
        names = _read_json(special_map)
        sources.append((special_map, names))
        config = {**config, **{k: v for k, v in names.items() if k.endswith("_token") and v is not None}}
    for file, data in sources:
        for key in ("additional_special_tokens", "extra_special_tokens"):
            listed = data.get(key) or []
            for t in listed.values() if isinstance(listed, dict) else listed:
                entry = t if isinstance(t, dict) else {"content": t}
                added.append((file, entry.get("content"), None, entry))
    added_file = folder / "added_tokens.json"
    if added_file.exists():
        added += [(added_file, t, i, {}) for t, i in _read_json(added_file).items()]
    return config, added


def _lengths_checked(config: dict, path: Path) -> dict:
    """`config` with its model_max_length and max_input_chars_per_word made integers (length_setting); the error
    names the file."""
    config = dict(config)
    for key in ("model_max_length", "max_input_chars_per_word"):
        if config.get(key) is not None:
            try:
                config[key] = length_setting(config[key], key)
            except ValueError as e:
                raise ValueError(f"{path}: {e}") from None
    return config


def length_setting(value, key: str) -> int:
    """A length setting (model_max_length, max_input_chars_per_word) as a positive int: a float that is a whole
    number (512.0) becomes it, an infinite one transformers' "no limit" (VERY_LARGE_INTEGER, which 1e30 already
    is); anything else is a ValueError naming `key`."""
    if isinstance(value, float) and value == float("inf"):
        value = VERY_LARGE_INTEGER
    elif isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{key} must be a positive whole number, got {value!r}")
    return int(value)
