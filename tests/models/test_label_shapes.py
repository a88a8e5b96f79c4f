"""Inputs and labels are taken in the batch's shape (labels also in one that differs only by axes of size 1),
never reshaped from another shape with the same number of values (which would score the wrong tokens); what is
no batch of token ids is named as such."""

import numpy as np
import pytest

from minibert import BertConfig, BertForMaskedLM, BertForTokenClassification

CFG = BertConfig.preset("tiny", vocab_size=50, hidden_size=16, num_attention_heads=2, intermediate_size=32,
                        num_hidden_layers=1, max_position_embeddings=8)
IDS = np.array([[1, 2, 3], [4, 5, 6]])


def test_transposed_labels_are_refused():
    tags = np.array([[0, 1, 2], [2, 1, 0]])
    model = BertForTokenClassification(CFG, num_labels=3)
    with pytest.raises(ValueError, match=r"labels has shape \(3, 2\), expected \(2, 3\)"):
        model.forward(IDS, labels=tags.T)
    with pytest.raises(ValueError, match=r"labels has shape \(3, 2\), expected \(2, 3\)"):
        BertForMaskedLM(CFG).forward(IDS, labels=np.full((3, 2), -100))
    from minibert.models.electra import ElectraForPreTraining
    with pytest.raises(ValueError, match=r"labels has shape \(3, 2\), expected \(2, 3\)"):
        ElectraForPreTraining(CFG).forward(IDS, labels=np.zeros((3, 2), dtype=np.int64))


def test_a_single_sequence_may_drop_its_batch_axis():
    model = BertForMaskedLM(CFG, seed=0).eval()
    labels = np.array([-100, 7, -100])
    one = model.forward(IDS[:1], labels=labels).loss
    assert one == model.forward(IDS[:1], labels=labels[None]).loss


def test_multi_label_targets_in_the_batchs_shape_only():
    from minibert import BertForSequenceClassification
    config = BertConfig.from_dict({**CFG.to_dict(), "problem_type": "multi_label_classification"})
    model = BertForSequenceClassification(config, num_labels=3)
    targets = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
    assert np.isfinite(model.forward(IDS, labels=targets).loss)
    with pytest.raises(ValueError, match=r"\(batch 2 x 3 classes\) has shape \(3, 2\), expected \(2, 3\)"):
        model.forward(IDS, labels=targets.T)


@pytest.mark.parametrize("bad, message", [
    ([], r"shape \(0,\): need at least one sequence"),
    ("some text", "got str: tokenize the text first"),
    ([[1, 2], [3]], "rows have different lengths: pad them"),
])
def test_input_ids_that_are_no_batch_of_ids_are_named(bad, message):
    with pytest.raises(ValueError, match=message):
        BertForMaskedLM(CFG).forward(bad)


def test_a_tokenizer_output_is_not_taken_for_ids():
    from minibert import WordPieceTokenizer
    tok = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello"])
    for encoded in (tok.encode("hello"), tok.encode_batch(["hello"])):
        with pytest.raises(ValueError, match="an encoding's .input_ids, or a batch as forward"):
            BertForMaskedLM(CFG).forward(encoded)
