"""The parameter table users draw by hand, computed from a real model's `params` dict.

Every row comes from grouping the Hugging Face parameter names: "bert.encoder.layer.0.intermediate.dense.weight"
belongs to section "encoder layer 0", component "intermediate.dense". Nothing here knows BERT's sizes: change the
model and the table follows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from minibert.viz.dims import legend, model_letters

SECTION_TITLES = {
    "embeddings": "embeddings",
    "layer": "one encoder layer",
    "pooler": "pooler (dense + tanh on [CLS])",
    "mlm": "MLM head (cls.predictions)",
    "nsp": "NSP head (cls.seq_relationship)",
    "other": "other parameters",
}


@dataclass
class Component:
    name: str  # e.g. "attention.self.query"
    shapes: list[tuple[int, ...]] = field(default_factory=list)  # weight first, then bias
    count: int = 0
    note: str = ""


@dataclass
class ParameterTable:
    sections: dict[str, list[Component]]  # "embeddings", "layer", "pooler", "mlm", "nsp", "other"
    layer_counts: list[int]  # parameters of each encoder layer
    total: int  # = model.num_parameters()
    tied_decoder: bool  # True when the MLM decoder reuses the word-embedding matrix
    word_embedding_shape: tuple[int, ...] | None

    def section_total(self, key: str) -> int:
        return sum(c.count for c in self.sections.get(key, ()))

    @property
    def without_pooler_and_nsp(self) -> int:
        return self.total - self.section_total("pooler") - self.section_total("nsp")


def split_param_name(name: str, base_prefix: str) -> tuple[str, int | None, str]:
    """"bert.encoder.layer.2.output.dense.bias" -> ("layer", 2, "output.dense.bias")."""
    n = name[len(base_prefix):] if base_prefix and name.startswith(base_prefix) else name
    parts = n.split(".")
    if parts[0] == "embeddings":
        return "embeddings", None, ".".join(parts[1:])
    if parts[:2] == ["encoder", "layer"]:
        return "layer", int(parts[2]), ".".join(parts[3:])
    if parts[0] == "pooler":
        return "pooler", None, ".".join(parts[1:])
    if parts[:2] == ["cls", "predictions"]:
        rest = ".".join(parts[2:])
        return "mlm", None, "decoder.bias" if rest == "bias" else rest  # HF stores the decoder bias here
    if parts[:2] == ["cls", "seq_relationship"]:
        return "nsp", None, ".".join(["seq_relationship"] + parts[2:])
    return "other", None, n


def build_parameter_table(model) -> ParameterTable:
    params = model.params
    base_prefix = getattr(model, "base_prefix", "")
    sections: dict[str, dict[str, Component]] = {}
    layers: dict[int, int] = {}
    word_shape = None
    seen = set()
    for name, array in params.items():
        section, layer, rest = split_param_name(name, base_prefix)
        seen.add((section, rest))
        if section == "embeddings" and rest == "word_embeddings.weight":
            word_shape = tuple(array.shape)
        if section == "layer":
            layers[layer] = layers.get(layer, 0) + array.size
            if layer != 0:
                continue  # every layer has the same components; layer 0 stands for all
        component = rest.rsplit(".", 1)[0] if rest.endswith((".weight", ".bias")) else rest
        comp = sections.setdefault(section, {}).setdefault(component, Component(component))
        comp.shapes.append(tuple(array.shape))
        comp.count += array.size
    tied = "mlm" in sections and ("mlm", "decoder.weight") not in seen and word_shape is not None
    if tied:
        # The MLM head multiplies by the word-embedding matrix itself (minibert/layers/heads.py): one matrix,
        # two jobs, counted once.
        decoder = sections["mlm"].setdefault("decoder", Component("decoder"))
        decoder.shapes.insert(0, word_shape)
        decoder.note = "weight tied to embeddings.word_embeddings: counted there, not again"
        # keep the order transform.* then decoder
        sections["mlm"]["decoder"] = sections["mlm"].pop("decoder")
    table = ParameterTable(
        sections={k: list(v.values()) for k, v in sections.items()},
        layer_counts=[layers[i] for i in sorted(layers)], total=model.num_parameters(), tied_decoder=tied,
        word_embedding_shape=word_shape)
    counted = sum(c.count for key, comps in table.sections.items() if key != "layer" for c in comps)
    counted += sum(table.layer_counts)
    assert counted == table.total, (counted, table.total)  # every parameter is in exactly one row
    return table


def _shape_text(shapes, letters, tied=False) -> str:
    """[(192, 192), (192,)] -> "H×H + H"; a tied weight is shown with "(tied)"."""
    from minibert.viz.dims import symbolic_shape
    parts = []
    for i, shape in enumerate(shapes):
        text = symbolic_shape(shape, letters, sep="×").strip("(),")
        parts.append(text + (" (tied)" if tied and i == 0 else ""))
    return " + ".join(parts)


def format_parameter_table(table: ParameterTable, config, title: str) -> str:
    letters = {k: v for k, v in model_letters(config, positions=True).items() if k in ("V", "H", "F", "P", "E")}
    n_layers = len(table.layer_counts)
    w_name, w_shape, w_count = 38, 22, 12
    shared = f", shared by all {config.num_hidden_layers} (ALBERT)" if config.shared_layers else ""
    lines = [title, legend(letters) + f"; {n_layers} encoder layers{shared}", ""]

    def row(name, shape="", count=None, note=""):
        count_text = "" if count is None else f"{count:,}"
        lines.append(f"{name:<{w_name}}{shape:<{w_shape}}{count_text:>{w_count}}" + (f"   {note}" if note else ""))

    lines.append(f"{'part':<{w_name}}{'shape':<{w_shape}}{'parameters':>{w_count}}")
    lines.append("-" * (w_name + w_shape + w_count))
    for key in ("embeddings", "layer", "pooler", "mlm", "nsp", "other"):
        comps = table.sections.get(key)
        if not comps:
            continue
        title_text = SECTION_TITLES[key] + (" (encoder.layer.0)" if key == "layer" else "")
        lines.append(title_text)
        for c in comps:
            tied = bool(c.note) and key == "mlm"
            row("  " + c.name, _shape_text(c.shapes, letters, tied=tied), c.count, c.note)
        if len(comps) > 1:
            row("  total", "", sum(c.count for c in comps))
        if key == "layer":
            per_layer = table.layer_counts[0]
            same = all(n == per_layer for n in table.layer_counts)
            if same:
                row(f"all {n_layers} encoder layers", f"{n_layers} × {per_layer:,}", sum(table.layer_counts))
            else:
                row(f"all {n_layers} encoder layers", "", sum(table.layer_counts),
                    "layers differ: " + ", ".join(f"{n:,}" for n in table.layer_counts))
    lines.append("-" * (w_name + w_shape + w_count))
    row("total (num_parameters)", "", table.total)
    has_extras = table.section_total("pooler") or table.section_total("nsp")
    if has_extras and "mlm" in table.sections:
        row("  without pooler and NSP head", "", table.without_pooler_and_nsp,
            "what masked-LM pre-training trains")
    if table.tied_decoder:
        untied = table.word_embedding_shape[0] * table.word_embedding_shape[1]
        row("  an untied decoder would add V×H", "", untied,
            f"-> {table.without_pooler_and_nsp + untied:,}" + (" without pooler and NSP head" if has_extras else ""))
    return "\n".join(lines)
