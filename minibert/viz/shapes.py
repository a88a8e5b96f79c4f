"""The journey of a batch through a model: every tensor's shape, recorded from a real forward pass.

Nothing here lists BERT's shapes. `trace_forward` wraps every layer function (`*_forward` in minibert/layers/)
where the models look it up, runs the model once on a small random batch, and records each call: its inputs,
its outputs, the parameters it was handed. Change the model code and the table changes with it.

    calls = trace_forward(model, batch_size=3, seq_len=10)
    print(format_journey(calls, model, title="..."))
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import re
import sys
from dataclasses import dataclass, field

import numpy as np

from minibert.viz.dims import legend, model_letters, numeric_shape, symbolic_shape

# What each layer function computes, for the "what" column. A function missing here is still traced and shown
# under its own name.
DESCRIPTIONS = {
    "embedding_forward": "word + position + type embeddings, LayerNorm",
    "encoder_layer_forward": "attention, add & norm, feed-forward, add & norm",
    "self_attention_forward": "A heads attend, outputs joined back",
    "softmax_forward": "softmax(q·kᵀ/√D + mask) over the keys",
    "linear_forward": "x Wᵀ + b",
    "layernorm_forward": "LayerNorm",
    "gelu_forward": "GELU",
    "gelu_tanh_forward": "GELU (tanh approximation)",
    "relu_forward": "ReLU",
    "tanh_forward": "tanh",
    "pooler_forward": "dense + tanh on the [CLS] token",
    "mlm_head_forward": "dense, act, LayerNorm, decoder to V",
    "nsp_head_forward": "is-next / not-next logits",
    "rtd_head_forward": "dense, act, dense to one logit per token: replaced or not",
    "relative_attention_forward": "relative-position embeddings, LayerNorm once, shared by every layer",
    "disentangled_attention_forward": "A heads attend (content and relative position), outputs joined back",
}
STAGES = ("embedding_forward", "relative_attention_forward", "encoder_layer_forward", "pooler_forward",
          "mlm_head_forward", "nsp_head_forward", "rtd_head_forward")
SKIPPED = ("dropout_forward",)  # identity in eval mode: nothing to see
LAYER_ROW = re.compile(r"^(encoder|transformer)\.layer\.\d+$")


@dataclass
class Call:
    """One recorded call of a layer function."""
    function: str
    inputs: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)  # (argument name, shape)
    outputs: list[tuple[int, ...]] = field(default_factory=list)
    param_names: list[str] = field(default_factory=list)  # parameters passed in as arrays
    prefix: str | None = None  # the parameter-name prefix argument, when the function takes one
    cache: object = None
    children: list["Call"] = field(default_factory=list)

    def all_param_names(self) -> list[str]:
        names = list(self.param_names)
        for c in self.children:
            names += c.all_param_names()
        return names


def _traced(fn, name, stack, param_ids):
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        call = Call(name)
        bound = signature.bind_partial(*args, **kwargs)
        for arg, value in bound.arguments.items():
            if isinstance(value, np.ndarray):
                if id(value) in param_ids:
                    call.param_names.append(param_ids[id(value)])
                else:
                    call.inputs.append((arg, value.shape))
            elif arg == "prefix" and isinstance(value, str):
                call.prefix = value
        stack[-1].children.append(call)
        stack.append(call)
        try:
            result = fn(*args, **kwargs)
        finally:
            stack.pop()
        # Layer functions return out or (out, ..., cache): everything but the last element is an output.
        outs = result[:-1] if isinstance(result, tuple) else (result,)
        call.outputs = [o.shape for o in outs if isinstance(o, np.ndarray)]
        call.cache = result[-1] if isinstance(result, tuple) else None
        return result
    return wrapper


@contextlib.contextmanager
def recording_layer_calls(params):
    """Within the block, every layer function called by the models is recorded; yields the root Call."""
    import minibert.models  # noqa: F401  (makes sure every model and layer module is loaded)
    root = Call("model")
    stack = [root]
    param_ids = {id(a): n for n, a in params.items()}
    patched = []
    modules = [m for n, m in sorted(sys.modules.items())
               if n.startswith(("minibert.layers.", "minibert.models.")) and m is not None]
    for module in modules:
        for attr, value in list(vars(module).items()):
            if not inspect.isfunction(value) or not value.__module__.startswith("minibert.layers."):
                continue
            if attr.endswith("_forward") and attr not in SKIPPED:
                patched.append((module, attr, value))
                setattr(module, attr, _traced(value, attr, stack, param_ids))
            elif attr == "get_activation":
                # Activations are looked up by name at run time: wrap the forward that comes back.
                def traced_get_activation(name, _get=value):
                    forward, backward = _get(name)
                    return _traced(forward, forward.__name__, stack, param_ids), backward
                patched.append((module, attr, value))
                setattr(module, attr, traced_get_activation)
    try:
        yield root
    finally:
        for module, attr, value in patched:
            setattr(module, attr, value)


@dataclass
class Journey:
    root: Call
    inputs: dict[str, tuple[int, ...]]
    outputs: dict[str, tuple[int, ...]]
    batch_size: int
    seq_len: int


def trace_forward(model, batch_size=3, seq_len=10, seed=0) -> Journey:
    """Run `model` (eval mode) on a random batch of shape (batch_size, seq_len) and record every layer call."""
    cfg = model.config
    if batch_size < 1:
        raise ValueError(f"--batch-size must be at least 1, got {batch_size}")
    if not 1 <= seq_len <= cfg.max_position_embeddings:
        raise ValueError(f"--seq-len must be in 1..{cfg.max_position_embeddings} (the model's "
                         f"max_position_embeddings), got {seq_len}")
    rng = np.random.default_rng(seed)
    input_ids = rng.integers(0, cfg.vocab_size, size=(batch_size, seq_len))  # (B, T)
    token_type_ids = np.zeros((batch_size, seq_len), dtype=np.int64)  # (B, T)
    has_token_types = getattr(cfg, "has_token_types", True)  # DistilBERT has none
    if cfg.type_vocab_size > 1:  # (RoBERTa has one token type)
        token_type_ids[:, seq_len // 2:] = 1  # a sentence pair: second half is segment B
    attention_mask = np.ones((batch_size, seq_len), dtype=np.int64)  # (B, T)
    if batch_size > 1 and seq_len > 2:
        attention_mask[-1, -2:] = 0  # the last sequence is shorter: two padding positions
    was_training = model.training
    model.eval()
    try:
        with recording_layer_calls(model.params) as root:
            out = model.forward(input_ids, token_type_ids=token_type_ids if has_token_types else None,
                                attention_mask=attention_mask)
    finally:
        model.train(was_training)
    outputs = {}
    for k, v in out.items():  # an output under two names (DistilBERT's logits = prediction_logits) is shown once
        if isinstance(v, np.ndarray) and not any(v is out[o] for o in outputs):
            outputs[k] = v.shape
    inputs = {"input_ids": input_ids.shape, "token_type_ids": token_type_ids.shape,
              "attention_mask": attention_mask.shape}
    if not has_token_types:
        del inputs["token_type_ids"]
    return Journey(root, inputs, outputs, batch_size, seq_len)


# ------------------------------------------------------------------------------------------------ the table

def _short(name: str, base_prefix: str) -> str:
    """"bert.encoder.layer.0.intermediate.dense.weight" -> "encoder.layer.0.intermediate.dense"."""
    if base_prefix and name.startswith(base_prefix):
        name = name[len(base_prefix):]
    return name.rsplit(".", 1)[0] if name.endswith((".weight", ".bias")) else name


def _stage_section(call: Call, base_prefix: str):
    """(section, layer) of a stage, from the names of the parameters its layer calls used (majority vote)."""
    from collections import Counter

    from minibert.viz.params_table import split_param_name
    sections = (split_param_name(n, base_prefix) for n in call.all_param_names())
    votes = Counter((section, layer) for section, layer, _ in sections)
    return votes.most_common(1)[0][0] if votes else ("other", None)


@dataclass
class Row:
    depth: int
    where: str
    what: str
    shape: tuple[int, ...] | None
    params: int | None = None
    weight_shape: tuple[int, ...] | None = None  # W of a linear layer, shown as "W (F, H)"
    note: str = ""  # printed after the weight shape
    fold_key: tuple = ()  # encoder layers with equal keys are printed once


def _stage_where(table, section: str, layer) -> str:
    """The name a stage's row shows: "encoder.layer.0", "cls.predictions", DistilBERT's "vocab_*", ..."""
    if section == "layer":
        return f"{table.layer_prefix}{layer}"
    heads = table.heads.get(section) or []
    if len(heads) == 1:
        return heads[0]
    common = os.path.commonprefix(heads).rstrip("._")
    if common:
        return common + "_*"
    return {"embeddings": "embeddings", "pooler": "pooler", "relative": "encoder.rel_embeddings"}.get(
        section, ", ".join(heads) or section)


def journey_rows(journey: Journey, model) -> list[Row]:
    """The table's rows: inputs, then every recorded call in order (stages at depth 1), then the outputs."""
    from minibert.viz.params_table import build_parameter_table
    base = getattr(model, "base_prefix", "")
    table = build_parameter_table(model)
    shapes = {n: a.shape for n, a in model.params.items()}
    notes = {"input_ids": "token ids (random: only shapes matter)",
             "token_type_ids": "segment A = 0, segment B = 1", "attention_mask": "1 = real token, 0 = padding"}
    rows = [Row(0, name, notes.get(name, "input"), shape) for name, shape in journey.inputs.items()]
    layer_calls = []

    def walk(call: Call, depth: int, section):
        for child in call.children:
            if depth == 1 and child.function in STAGES:
                sec, layer = _stage_section(child, base)
                params = table.layer_counts[layer] if sec == "layer" else table.section_total(sec)
                if sec == "layer":
                    layer_calls.append(layer)
                    if model.config.shared_layers and len(layer_calls) > 1:  # ALBERT: layer 0's weights again
                        layer, params = len(layer_calls) - 1, 0
                where = _stage_where(table, sec, layer)
                what = DESCRIPTIONS.get(child.function, child.function)
                if child.function == "embedding_forward":  # DistilBERT: no token types; DeBERTa maybe no positions
                    parts = ["word", "position" if getattr(model.config, "position_biased_input", True) else "",
                             "type" if getattr(model.config, "has_token_types", True) else ""]
                    what = " + ".join(p for p in parts if p) + " embeddings, LayerNorm"
                stage = Row(depth, where, what,
                            child.outputs[0] if child.outputs else None, params)
                rows.append(stage)
                start = len(rows)
                only_child = len(child.children) == 1 and child.children[0].outputs == child.outputs
                if not only_child:  # a head that is one linear layer needs no second row
                    walk(child, depth + 1, sec)
                stage.fold_key = (child.function, sec, tuple((r.depth, r.where, r.shape) for r in rows[start:]))
                continue
            # a call between the stages (ALBERT's projection, pre-LN's final LayerNorm, a classifier's layers)
            # owns the parameters of its own section
            own_section = section or _stage_section(child, base)[0]
            before, after = _call_rows(child, depth, base, shapes, own_section)
            rows.extend(before)
            walk(child, depth + 1, section)
            rows.extend(after)

    walk(journey.root, 1, None)
    rows += [Row(0, name, "model output", shape) for name, shape in journey.outputs.items()]
    return rows


def _call_rows(call: Call, depth: int, base: str, shapes: dict, section) -> tuple[list[Row], list[Row]]:
    """Rows for one layer call: those printed before its sub-calls and those after (its output)."""
    from minibert.viz.params_table import split_param_name
    what = DESCRIPTIONS.get(call.function, call.function.removesuffix("_forward"))
    own = [n for n in call.param_names if split_param_name(n, base)[0] == section]
    borrowed = [n for n in call.param_names if n not in own]
    where = call.function.removesuffix("_forward")
    if own:
        where = _short(own[0], base)
        if section == "layer":
            where = where.split(".", 3)[-1]  # "encoder.layer.0.output.dense" -> "output.dense"
        else:  # "cls.predictions.transform.dense" -> "transform.dense" under the stage's own row
            for stage_prefix in ("cls.predictions.", "pooler.", "embeddings."):
                where = where.removeprefix(stage_prefix)
    note = ""
    if borrowed and section == "mlm":  # the decoder: its bias is the head's, its matrix the word embeddings
        rest = split_param_name(own[0], base)[2] if own else "decoder.bias"
        where = rest.rsplit(".", 1)[0]  # "decoder", DistilBERT's "vocab_projector", ...
        note = f"= {_short(borrowed[0], base).split('.')[-1]} (tied)"
    params = sum(int(np.prod(shapes[n])) for n in own) if call.param_names else None
    weight = shapes[call.param_names[0]] if call.function == "linear_forward" and call.param_names else None
    before = []
    if call.function == "self_attention_forward":
        where = "attention.self"
        what = "context: probs · v, heads joined back"
        # q, k and v are made inside the function; its cache holds them: (x, w_qkv, q, k, v, ...).
        q = call.cache[2] if isinstance(call.cache, tuple) and len(call.cache) > 4 else None
        if isinstance(q, np.ndarray) and q.ndim == 4:
            before.append(Row(depth, where, "q, k, v each: x Wᵀ + b, split into A heads", q.shape,
                              params=sum(int(np.prod(shapes[n])) for n in own) if own else None))
            params = None  # counted on the q, k, v row
    after = [Row(depth, where, what, call.outputs[0] if call.outputs else None, params, weight, note)]
    return before, after


def fold_layers(rows: list[Row]) -> list[Row]:
    """Print encoder layers 1..L-1 as one line when their sub-rows have the same shapes as layer 0."""
    out, i = [], 0
    while i < len(rows):
        row = rows[i]
        if row.depth == 1 and LAYER_ROW.match(row.where):
            j = i + 1
            while j < len(rows) and rows[j].depth > 1:
                j += 1
            out += rows[i:j]  # the first layer, in full
            same = []
            while j < len(rows) and rows[j].depth == 1 and rows[j].fold_key and rows[j].fold_key == row.fold_key:
                same.append(rows[j])
                j += 1
                while j < len(rows) and rows[j].depth > 1:
                    j += 1
            if same:
                first, last = same[0].where.rsplit(".", 1)[1], same[-1].where.rsplit(".", 1)[1]
                span = first if first == last else f"{first}-{last}"
                prefix = row.where.rsplit(".", 1)[0]
                out.append(Row(1, f"{prefix}.{span}", f"{len(same)} more layer(s), the same shapes as "
                               f"{row.where}", same[-1].shape, sum(r.params or 0 for r in same)))
            i = j
            continue
        out.append(row)
        i += 1
    return out


def format_journey(journey: Journey, model, title: str, all_layers: bool = False) -> str:
    cfg = model.config
    letters = model_letters(cfg, journey.batch_size, journey.seq_len)
    if getattr(model, "num_labels", None):  # a classifier or tagger: C classes
        letters["C"] = model.num_labels
    letters_bt = dict(letters)
    letters_bt["B·T"] = journey.batch_size * journey.seq_len  # the MLM head sees all tokens flattened
    rows = journey_rows(journey, model)
    if not all_layers:
        rows = fold_layers(rows)
    table = []
    for r in rows:
        what = r.what
        if r.weight_shape is not None:
            what += f", W {symbolic_shape(r.weight_shape, letters)}" + (f" {r.note}" if r.note else "")
        shape_sym = symbolic_shape(r.shape, letters_bt) if r.shape is not None else ""
        shape_num = numeric_shape(r.shape) if r.shape is not None else ""
        params = f"{r.params:,}" if r.params is not None else ""
        table.append(("  " * max(r.depth - 1, 0) + r.where, what, shape_sym, shape_num, params))
    head = ("where", "what", "shape", "sizes", "params")
    widths = [max(len(head[k]), *(len(t[k]) for t in table)) for k in range(5)]
    line = lambda t: "  ".join(  # noqa: E731
        (t[k].rjust(widths[k]) if k == 4 else t[k].ljust(widths[k])) for k in range(5)).rstrip()
    rule = "-" * len(line(tuple("x" * w for w in widths)))
    out = [title, legend(letters), "", line(head), rule]
    prev_depth = 0
    for r, t in zip(rows, table):
        if (r.depth == 0) != (prev_depth == 0):  # a blank line between inputs, the model, and outputs
            out.append("")
        out.append(line(t))
        prev_depth = r.depth
    total = sum(r.params or 0 for r in rows if r.depth == 1)
    out += [rule,
            f"parameters in the stages above: {total:,} (model.num_parameters() = {model.num_parameters():,})",
            "Shapes traced from a real forward pass in eval mode (dropout off)."]
    if any(r.where == "cls.predictions" for r in rows):
        out[-1] += " In pre-training (with labels) the decoder runs only at the M masked positions: (M, V)."
    return "\n".join(out)
