"""WordPiece tokenization, as BERT does it, in pure Python.

    from minibert.tokenizer import WordPieceTokenizer, train_wordpiece
    tok = WordPieceTokenizer.from_pretrained("path/to/bert")     # vocab.txt and/or tokenizer.json
    enc = tok.encode("Hello world!")                              # .input_ids, .token_type_ids, ...
    batch = tok.encode_batch(["a text", "another"])               # (B, T) NumPy arrays
    tok = train_wordpiece([Path("corpus.txt")], vocab_size=8192)  # a new vocabulary

basic.py (cleaning, words) -> wordpiece.py (pieces, ids, files) ; trainer.py learns a vocabulary.
"""

from minibert.tokenizer.basic import BasicTokenizer
from minibert.tokenizer.trainer import train_wordpiece
from minibert.tokenizer.wordpiece import SPECIAL_TOKENS, BatchEncoding, Encoding, WordPieceTokenizer

__all__ = ["BasicTokenizer", "BatchEncoding", "Encoding", "SPECIAL_TOKENS", "WordPieceTokenizer",
           "train_wordpiece"]
