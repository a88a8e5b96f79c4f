"""AdamW and clipping over flat buffers give exactly what the per-tensor path gives (which tests/models/
test_parity_hf.py compares with torch), and the optimizer state round-trips through a safetensors file."""

import numpy as np
import pytest

from minibert import AdamW, BertConfig, BertForPreTraining, clip_grad_norm, optim
from minibert.io.safetensors_io import load_safetensors, save_safetensors


def model_with_grads(seed=0, dtype=np.float32):
    cfg = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=32, max_position_embeddings=20)
    model = BertForPreTraining(cfg, seed=seed, dtype=dtype)
    return model


def fill_grads(grads, seed):
    rng = np.random.default_rng(seed)
    for g in grads.values():
        g[...] = rng.standard_normal(g.shape)


def separate(arrays):
    """Plain dict of separate copies: AdamW takes its per-tensor path."""
    return {k: v.copy() for k, v in arrays.items()}


@pytest.mark.parametrize("no_decay", [None, lambda n: "query" in n or n.endswith("bias")])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("block", [None, 1000, 37])  # the tiny model fits one block; smaller ones split it
def test_flat_adamw_equals_per_tensor_adamw(no_decay, dtype, block, monkeypatch):
    if block:
        monkeypatch.setattr(optim, "BLOCK", block)
    model = model_with_grads(dtype=dtype)
    params, grads = separate(model.params), separate(model.grads)
    kwargs = dict(lr=1e-2, weight_decay=0.1, **({} if no_decay is None else {"no_decay": no_decay}))
    flat, loop = AdamW(model.params, model.grads, **kwargs), AdamW(params, grads, **kwargs)
    assert flat.flat and not loop.flat
    for step in range(4):
        fill_grads(model.grads, step)
        fill_grads(grads, step)
        flat.step(lr=1e-2 * (step + 1))
        loop.step(lr=1e-2 * (step + 1))
    for name in params:
        for ours, theirs in ((model.params, params), (flat.m, loop.m), (flat.v, loop.v)):
            np.testing.assert_array_equal(ours[name], theirs[name], err_msg=name)
    # weight decay was applied to exactly the decayed arrays: with zero gradients only decay moves a parameter
    decay = {n: flat.decay[n] for n in params}
    assert any(decay.values()) and not all(decay.values())
    model.zero_grad()
    before = separate(model.params)
    flat.m.buffer.fill(0.0)
    flat.step(lr=1.0)
    for name, p in model.params.items():
        assert np.array_equal(p, before[name]) != decay[name], name


def test_a_replaced_entry_falls_back_to_the_per_tensor_path():
    model = model_with_grads()
    fill_grads(model.grads, 1)
    params, grads = separate(model.params), separate(model.grads)
    flat, loop = AdamW(model.params, model.grads, lr=1e-2), AdamW(params, grads, lr=1e-2)
    name = "bert.encoder.layer.0.output.dense.weight"
    model.params[name] = np.asfortranarray(model.params[name])  # detached from the buffer
    flat.step()
    loop.step()
    for k in params:
        np.testing.assert_array_equal(model.params[k], params[k], err_msg=k)


def test_flat_clipping_equals_per_tensor_clipping():
    model = model_with_grads()
    fill_grads(model.grads, 2)
    grads = separate(model.grads)
    norm, expected = clip_grad_norm(model.grads, 1.0), clip_grad_norm(grads, 1.0)
    assert norm == pytest.approx(expected, rel=1e-6) and norm > 1.0
    for k in grads:
        np.testing.assert_allclose(model.grads[k], grads[k], rtol=1e-6, err_msg=k)
    assert clip_grad_norm(model.grads, 0.0) == pytest.approx(1.0, rel=1e-5)  # clipped to norm 1 above


def test_optimizer_state_round_trips_through_a_file(tmp_path):
    model = model_with_grads()
    opt = AdamW(model.params, model.grads, lr=1e-2)
    for step in range(2):
        fill_grads(model.grads, step)
        opt.step()
    state = opt.state_dict()
    assert set(state) == {"step"} | {f"{kind}.{name}" for kind in "mv" for name in model.params}
    save_safetensors({k: np.ascontiguousarray(v) for k, v in state.items()}, tmp_path / "optimizer.safetensors")

    resumed = model_with_grads()
    resumed.params.buffer[:] = model.params.buffer
    opt2 = AdamW(resumed.params, resumed.grads, lr=1e-2)
    opt2.load_state_dict(load_safetensors(tmp_path / "optimizer.safetensors"))
    assert opt2.t == 2 and opt2.flat
    np.testing.assert_array_equal(opt2.m.buffer, opt.m.buffer)
    np.testing.assert_array_equal(opt2.v.buffer, opt.v.buffer)
    for o, m in ((opt, model), (opt2, resumed)):
        fill_grads(m.grads, 9)
        o.step()
    np.testing.assert_array_equal(resumed.params.buffer, model.params.buffer)
