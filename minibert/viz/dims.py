"""Writing shapes with the letters of docs/ARCHITECTURE.md: (3, 10, 192) -> "(B, T, H)".

A size is written as a letter only when exactly one letter has that value; otherwise (say A = 2 and the two
NSP classes) the number itself is shown, because guessing could print a wrong letter.
"""

from __future__ import annotations

LETTER_MEANINGS = {
    "B": "batch size",
    "T": "tokens per sequence",
    "H": "hidden size",
    "A": "attention heads",
    "D": "head size (H / A)",
    "F": "feed-forward size",
    "V": "vocabulary size",
    "P": "max positions",
    "E": "embedding size (when not H: ALBERT, an ELECTRA generator)",
    "C": "classes",
}


def model_letters(config, batch_size=None, seq_len=None, positions=False) -> dict[str, int]:
    """Letter -> size for a config (plus B and T when given, P when `positions`)."""
    letters = {}
    if batch_size is not None:
        letters["B"] = batch_size
    if seq_len is not None:
        letters["T"] = seq_len
    letters.update(H=config.hidden_size, A=config.num_attention_heads, D=config.head_size,
                   F=config.intermediate_size, V=config.vocab_size)
    if positions:
        letters["P"] = config.max_position_embeddings
    if config.embedding_width != config.hidden_size:
        letters["E"] = config.embedding_width
    return letters


def ambiguous_letters(letters: dict[str, int], literals=(2,)) -> set[str]:
    """Letters whose value is shared with another letter or with a literal size such as the 2 NSP classes."""
    out = set()
    for name, value in letters.items():
        if value in literals or sum(v == value for v in letters.values()) > 1:
            out.add(name)
    return out


def symbolic_shape(shape, letters: dict[str, int], literals=(2,), sep=", ") -> str:
    """(3, 10, 192) -> "(B, T, H)"; sizes with no letter, or an ambiguous one, stay numbers."""
    unclear = ambiguous_letters(letters, literals)
    by_value = {v: k for k, v in letters.items() if k not in unclear}
    parts = [by_value.get(int(n), str(int(n))) for n in shape]
    return "(" + sep.join(parts) + ("," if len(parts) == 1 and sep == ", " else "") + ")"


def numeric_shape(shape) -> str:
    return "(" + ", ".join(str(int(n)) for n in shape) + ("," if len(shape) == 1 else "") + ")"


def legend(letters: dict[str, int], literals=(2,)) -> str:
    """One line such as "B=3 batch size, T=10 tokens per sequence, ..." noting letters written as numbers."""
    unclear = ambiguous_letters(letters, literals)
    parts = []
    for name, value in letters.items():
        note = " (written as a number: another size is equal)" if name in unclear else ""
        parts.append(f"{name}={value:,} {LETTER_MEANINGS[name]}{note}")
    return ", ".join(parts)
