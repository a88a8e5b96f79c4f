"""Parameters and gradients are views into one flat buffer each (minibert.flat), and stay so through
initialisation, casting and checkpoint loading."""

import numpy as np
import pytest

from minibert import BertConfig, BertForPreTraining, BertForSequenceClassification
from minibert.flat import FlatArrays
from minibert.optim import default_no_decay


def tiny_config():
    return BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=32, max_position_embeddings=20)


def assert_views_tile_the_buffer(arrays: FlatArrays):
    """Every entry is a C-contiguous view of `arrays.buffer`, at its own slice, and together they cover it."""
    assert arrays.intact()
    buf = arrays.buffer
    base = buf.__array_interface__["data"][0]
    for name, a in arrays.items():
        s = arrays.slices[name]
        assert a.flags.c_contiguous and a.dtype == buf.dtype and a.size == s.stop - s.start, name
        assert a.__array_interface__["data"][0] == base + s.start * buf.itemsize, name
    starts = sorted((s.start, s.stop) for s in arrays.slices.values())
    assert starts[0][0] == 0 and starts[-1][1] == buf.size
    assert all(a[1] == b[0] for a, b in zip(starts, starts[1:]))  # no gap, no overlap


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_params_and_grads_are_views_of_one_buffer_each(dtype):
    model = BertForPreTraining(tiny_config(), seed=1, dtype=dtype)
    for arrays in (model.params, model.grads):
        assert_views_tile_the_buffer(arrays)
        assert arrays.buffer.dtype == dtype and arrays.buffer.size == model.num_parameters()
    assert list(model.params) == list(model.params.shapes)  # names in Hugging Face's order
    assert "cls.predictions.decoder.weight" not in model.params  # tied to the word embeddings
    # the random init went into the buffer
    assert np.array_equal(model.params.buffer[model.params.slices["cls.predictions.transform.dense.weight"]],
                          model.params["cls.predictions.transform.dense.weight"].reshape(-1))
    assert model.params.buffer.std() > 0


def test_writing_through_a_name_changes_the_buffer_and_nothing_else():
    model = BertForPreTraining(tiny_config(), seed=2)
    name = "bert.encoder.layer.1.attention.self.query.weight"
    before = model.params.buffer.copy()
    model.params[name][...] = 7.0
    s = model.params.slices[name]
    assert (model.params.buffer[s] == 7.0).all()
    outside = np.ones(before.size, dtype=bool)
    outside[s] = False
    assert np.array_equal(model.params.buffer[outside], before[outside])
    model.grads[name] += 3.0
    assert (model.grads.buffer[model.grads.slices[name]] == 3.0).all()
    assert model.grads.buffer.sum() == 3.0 * (s.stop - s.start)
    model.zero_grad()
    assert not model.grads.buffer.any()


def test_no_decay_arrays_form_one_segment_at_the_end():
    params = BertForPreTraining(tiny_config()).params
    spans = sorted((s.start, default_no_decay(n)) for n, s in params.slices.items())
    flags = [no_decay for _, no_decay in spans]
    assert flags == sorted(flags) and any(flags) and not all(flags)  # False... then True...


def test_astype_keeps_the_views_and_the_values():
    model = BertForPreTraining(tiny_config(), seed=3)
    params_dict, values = model.params, {k: v.copy() for k, v in model.params.items()}
    model.grads.buffer[:] = 1.0
    model.astype(np.float64)
    assert model.params is params_dict and model.params.buffer.dtype == np.float64
    for arrays in (model.params, model.grads):
        assert_views_tile_the_buffer(arrays)
    assert not model.grads.buffer.any()
    for k, v in values.items():
        np.testing.assert_array_equal(model.params[k], v.astype(np.float64), err_msg=k)


def test_a_replaced_entry_is_noticed_and_rejoins_on_cast():
    model = BertForPreTraining(tiny_config(), seed=4)
    name = "bert.pooler.dense.weight"
    model.params[name] = np.asfortranarray(model.params[name] + 1.0)  # no longer a view of the buffer
    assert not model.params.intact()
    expected = model.params[name].copy()
    model.astype(np.float32)
    assert_views_tile_the_buffer(model.params)
    np.testing.assert_array_equal(model.params[name], expected)


def test_loaded_and_cloned_models_keep_flat_buffers(tmp_path):
    BertForSequenceClassification(tiny_config(), num_labels=3, seed=5).save_pretrained(tmp_path)
    model = BertForSequenceClassification.from_pretrained(tmp_path)
    for arrays in (model.params, model.grads):
        assert_views_tile_the_buffer(arrays)
    copy = model.params.clone()
    assert_views_tile_the_buffer(copy)
    assert not np.shares_memory(copy.buffer, model.params.buffer)
    assert np.array_equal(copy.buffer, model.params.buffer)
