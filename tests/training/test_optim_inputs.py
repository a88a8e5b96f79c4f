"""AdamW refuses what it cannot train in one line naming the argument: lists instead of dicts (the torch
habit), numbers given as strings, params and grads that do not match, and the two swapped."""

import numpy as np
import pytest

from minibert import AdamW, BertConfig, BertForPreTraining


@pytest.fixture(scope="module")
def model():
    return BertForPreTraining(BertConfig.preset("tiny", vocab_size=64), seed=0)


def one_line(excinfo) -> str:
    message = str(excinfo.value)
    assert len(message.splitlines()) == 1, message
    return message


def test_lists_instead_of_dicts(model):
    with pytest.raises(TypeError) as e:
        AdamW(list(model.params.values()), list(model.grads.values()))
    assert "params must be a dict of name -> array, e.g. model.params (got a list)" in one_line(e)
    with pytest.raises(TypeError) as e:
        AdamW(model.params, list(model.grads.values()))
    assert "grads must be a dict of name -> array, e.g. model.grads (got a list)" in one_line(e)
    with pytest.raises(TypeError) as e:
        AdamW({"w": [1.0, 2.0]}, {"w": np.zeros(2)})
    assert "params['w'] must be a floating-point NumPy array, got a list" in one_line(e)


@pytest.mark.parametrize("option, value", [("lr", "1e-3"), ("eps", None), ("weight_decay", "0.01"), ("lr", True)])
def test_numbers_that_are_not_numbers(model, option, value):
    with pytest.raises(TypeError) as e:
        AdamW(model.params, model.grads, **{option: value})
    assert f"AdamW: {option} must be a number, got {value!r}" in one_line(e)


def test_betas_and_step_lr(model):
    with pytest.raises(TypeError, match=r"betas must be two numbers \(beta1, beta2\), got 0.9"):
        AdamW(model.params, model.grads, betas=0.9)
    with pytest.raises(ValueError, match=r"betas must be in \[0, 1\)"):
        AdamW(model.params, model.grads, betas=(0.9, 1.0))
    opt = AdamW(model.params, model.grads)
    with pytest.raises(TypeError, match="AdamW.step: lr must be a number, got '1e-3'"):
        opt.step("1e-3")
    assert opt.t == 0  # nothing was done


def test_params_and_grads_must_match(model):
    grads = dict(model.grads)
    name = next(iter(grads))
    del grads[name]
    with pytest.raises(ValueError) as e:
        AdamW(model.params, grads)
    assert f"grads has no entry {name!r}" in one_line(e)
    grads = dict(model.grads)
    grads[name] = np.zeros(3, dtype=np.float32)
    with pytest.raises(ValueError) as e:
        AdamW(model.params, grads)
    assert f"grads[{name!r}] has shape (3,) but params[{name!r}] has shape" in one_line(e)
    # A subset of the weights (the rest frozen) is fine.
    AdamW({name: model.params[name]}, model.grads)


def test_swapped_params_and_grads_are_refused(model):
    model.zero_grad()
    with pytest.raises(ValueError) as e:
        AdamW(model.grads, model.params)
    assert "swapped" in one_line(e) and "AdamW(model.params, model.grads" in str(e.value)
    AdamW(model.params, model.grads)  # the right order


def test_a_step_leaves_the_gradients_alone(model):
    model.zero_grad()
    model.grads.buffer[:] = 1.0
    before = model.params.clone()
    AdamW(model.params, model.grads, lr=1e-3).step()
    assert (model.grads.buffer == 1.0).all()  # not zeroed: model.zero_grad() does that
    assert not np.array_equal(before.buffer, model.params.buffer)
    assert AdamW.__doc__ and "zero" in AdamW.step.__doc__
