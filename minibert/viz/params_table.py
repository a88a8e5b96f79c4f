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
    "relative": "relative positions (shared by all layers)",
    "pooler": "pooler (dense + tanh on [CLS])",
    "mlm": "MLM head",
    "nsp": "NSP head",
    "rtd": "replaced-token-detection head",
    "classifier": "classifier head",
    "qa": "question-answering head",
    "other": "other parameters",
}
SECTIONS = tuple(SECTION_TITLES)
# The heads, by the first part(s) of their parameter names (BERT, DistilBERT, ELECTRA, the task models)
HEADS = (("cls.predictions", "mlm"), ("cls.seq_relationship", "nsp"),
         ("vocab_transform", "mlm"), ("vocab_layer_norm", "mlm"), ("vocab_projector", "mlm"),  # DistilBERT
         ("generator_predictions", "mlm"), ("generator_lm_head", "mlm"),  # ELECTRA's generator
         ("discriminator_predictions", "rtd"),  # ELECTRA's discriminator
         ("pre_classifier", "classifier"), ("classifier", "classifier"), ("qa_outputs", "qa"))
DECODERS = ("decoder", "vocab_projector", "generator_lm_head")  # the MLM head's output layer, by family


@dataclass
class Component:
    name: str  # e.g. "attention.self.query"
    shapes: list[tuple[int, ...]] = field(default_factory=list)  # weight first, then bias
    count: int = 0
    note: str = ""


@dataclass
class ParameterTable:
    sections: dict[str, list[Component]]  # keys of SECTION_TITLES that the model has
    layer_counts: list[int]  # parameters of each encoder layer
    total: int  # = model.num_parameters()
    tied_decoder: bool  # True when the MLM decoder reuses the word-embedding matrix
    word_embedding_shape: tuple[int, ...] | None
    heads: dict[str, list[str]] = field(default_factory=dict)  # section -> where its names live ("cls.predictions")
    layer_prefix: str = "encoder.layer."  # "transformer.layer." for a DistilBERT

    def section_total(self, key: str) -> int:
        return sum(c.count for c in self.sections.get(key, ()))

    @property
    def without_pooler_and_nsp(self) -> int:
        return self.total - self.section_total("pooler") - self.section_total("nsp")


def _unprefixed(name: str, base_prefix: str) -> str:
    """"bert.encoder.layer.0.output.dense.bias" -> "encoder.layer.0.output.dense.bias" (base_prefix "bert.")."""
    return name[len(base_prefix):] if base_prefix and name.startswith(base_prefix) else name


def _matching_head(n: str) -> tuple[str, str] | None:
    """(where the head's names live, its section) for an unprefixed name of one of HEADS' heads, else None."""
    return next(((head, section) for head, section in HEADS if n == head or n.startswith(head + ".")), None)


def split_param_name(name: str, base_prefix: str) -> tuple[str, int | None, str]:
    """"bert.encoder.layer.2.output.dense.bias" -> ("layer", 2, "output.dense.bias");
    "distilbert.transformer.layer.0.ffn.lin1.weight" -> ("layer", 0, "ffn.lin1.weight");
    "classifier.weight" -> ("classifier", None, "classifier.weight")."""
    n = _unprefixed(name, base_prefix)
    parts = n.split(".")
    if parts[0] == "embeddings":
        return "embeddings", None, ".".join(parts[1:])
    if parts[:2] in (["encoder", "layer"], ["transformer", "layer"]) and len(parts) > 3 and parts[2].isdigit():
        return "layer", int(parts[2]), ".".join(parts[3:])
    if parts[0] == "encoder" and len(parts) > 1 and parts[1] in ("rel_embeddings", "LayerNorm"):  # DeBERTa
        return "relative", None, ".".join(parts[1:])
    if parts[0] == "pooler":
        return "pooler", None, ".".join(parts[1:])
    if parts[:2] == ["cls", "predictions"]:
        rest = ".".join(parts[2:])
        return "mlm", None, "decoder.bias" if rest == "bias" else rest  # HF stores the decoder bias here
    if parts[:2] == ["cls", "seq_relationship"]:
        return "nsp", None, ".".join(["seq_relationship"] + parts[2:])
    match = _matching_head(n)
    return (match[1], None, n) if match else ("other", None, n)


def _head_of(name: str, base_prefix: str) -> str:
    """Where a head's parameter lives, for the section's title: "cls.predictions", "vocab_transform", ..."""
    n = _unprefixed(name, base_prefix)
    match = _matching_head(n)
    return match[0] if match else n.split(".")[0]


def build_parameter_table(model) -> ParameterTable:
    params = model.params
    base_prefix = getattr(model, "base_prefix", "")
    sections: dict[str, dict[str, Component]] = {}
    heads: dict[str, list[str]] = {}
    layers: dict[int, int] = {}
    layer_prefix = "encoder.layer."
    word_shape = None
    seen = set()
    for name, array in params.items():
        section, layer, rest = split_param_name(name, base_prefix)
        seen.add((section, rest))
        if section == "embeddings" and rest == "word_embeddings.weight":
            word_shape = tuple(array.shape)
        if section in ("mlm", "nsp", "rtd", "classifier", "qa"):
            head = _head_of(name, base_prefix)
            if head not in heads.setdefault(section, []):
                heads[section].append(head)
        if section == "layer":
            layer_prefix = _unprefixed(name, base_prefix).split(".")[0] + ".layer."
            layers[layer] = layers.get(layer, 0) + array.size
            if layer != 0:
                continue  # every layer has the same components; layer 0 stands for all
        component = rest.rsplit(".", 1)[0] if rest.endswith((".weight", ".bias")) else rest
        comp = sections.setdefault(section, {}).setdefault(component, Component(component))
        comp.shapes.append(tuple(array.shape))
        comp.count += array.size
    decoder_name = next((d for d in DECODERS if d in sections.get("mlm", {})), "decoder")
    tied = "mlm" in sections and ("mlm", f"{decoder_name}.weight") not in seen and word_shape is not None
    if tied:
        # The MLM head multiplies by the word-embedding matrix itself (minibert/layers/heads.py): one matrix,
        # two jobs, counted once.
        decoder = sections["mlm"].setdefault(decoder_name, Component(decoder_name))
        decoder.shapes.insert(0, word_shape)
        decoder.note = "weight tied to embeddings.word_embeddings: counted there, not again"
        # keep the order transform.* then decoder
        sections["mlm"][decoder_name] = sections["mlm"].pop(decoder_name)
    table = ParameterTable(
        sections={k: list(sections[k].values()) for k in SECTIONS if k in sections},
        layer_counts=[layers[i] for i in sorted(layers)], total=model.num_parameters(), tied_decoder=tied,
        word_embedding_shape=word_shape, heads=heads, layer_prefix=layer_prefix)
    counted = sum(c.count for key, comps in table.sections.items() if key != "layer" for c in comps)
    counted += sum(table.layer_counts)
    assert counted == table.total, (counted, table.total)  # every parameter is in exactly one row
    return table


def section_title(table: ParameterTable, key: str, config=None) -> str:
    """"MLM head (cls.predictions)", "one encoder layer (encoder.layer.0)", ..."""
    title = SECTION_TITLES[key]
    if key == "pooler" and getattr(config, "pooler_hidden_act", None):  # DeBERTa's classifier pooler
        title = f"pooler (dense + {config.pooler_hidden_act} on [CLS])"
    if key == "layer":
        return f"{title} ({table.layer_prefix}0)"
    if table.heads.get(key):
        return f"{title} ({', '.join(table.heads[key])})"
    return title


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
    if not getattr(config, "position_biased_input", True):
        letters.pop("P", None)  # no position table (DeBERTa): a size that equals P means something else
    classifier = next((c for c in table.sections.get("classifier", ()) if c.name == "classifier"), None)
    if classifier is not None:  # C classes (a classifier or a tagger)
        letters["C"] = classifier.shapes[0][0]
    n_layers = len(table.layer_counts)
    layers_text = f"{n_layers} encoder layer{'s' if n_layers != 1 else ''}"
    longest = max((len(c.name) + 3 for comps in table.sections.values() for c in comps), default=0)
    w_name, w_shape, w_count = max(38, longest), 22, 12  # 38: BERT's names (and the docs' example) fit
    shared = f", shared by all {config.num_hidden_layers} (ALBERT)" if config.shared_layers else ""
    lines = [title, legend(letters) + f"; {layers_text}{shared}", ""]

    def row(name, shape="", count=None, note=""):
        count_text = "" if count is None else f"{count:,}"
        lines.append(f"{name:<{w_name}}{shape:<{w_shape}}{count_text:>{w_count}}" + (f"   {note}" if note else ""))

    lines.append(f"{'part':<{w_name}}{'shape':<{w_shape}}{'parameters':>{w_count}}")
    lines.append("-" * (w_name + w_shape + w_count))
    for key in SECTIONS:
        comps = table.sections.get(key)
        if not comps:
            continue
        lines.append(section_title(table, key, config))
        for c in comps:
            tied = bool(c.note) and key == "mlm"
            row("  " + c.name, _shape_text(c.shapes, letters, tied=tied), c.count, c.note)
        if len(comps) > 1:
            row("  total", "", sum(c.count for c in comps))
        if key == "layer":
            per_layer = table.layer_counts[0]
            same = all(n == per_layer for n in table.layer_counts)
            label = (f"the shared layer, used {config.num_hidden_layers} times" if config.shared_layers else
                     f"all {layers_text}")
            if same:
                row(label, f"{n_layers} × {per_layer:,}", sum(table.layer_counts))
            else:
                row(label, "", sum(table.layer_counts),
                    "layers differ: " + ", ".join(f"{n:,}" for n in table.layer_counts))
    lines.append("-" * (w_name + w_shape + w_count))
    row("total (num_parameters)", "", table.total)
    has_extras = table.section_total("pooler") or table.section_total("nsp")
    if has_extras and "mlm" in table.sections:
        row("  without pooler and NSP head", "", table.without_pooler_and_nsp,
            "what masked-LM pre-training trains")
    if table.tied_decoder:
        untied = table.word_embedding_shape[0] * table.word_embedding_shape[1]
        matrix = _shape_text([table.word_embedding_shape], letters)  # V×H, or V×E (ALBERT)
        row(f"  an untied decoder would add {matrix}", "", untied,
            f"-> {table.without_pooler_and_nsp + untied:,}" + (" without pooler and NSP head" if has_extras else ""))
    return "\n".join(lines)
