"""Watching activation recompute (minibert/models/bert.py) happen."""


def record_recomputed_layers(monkeypatch) -> list:
    """From now on, every layer the encoders recompute in a backward is appended to the returned list as
    (the model that owns the encoder, the layer's index)."""
    from minibert.models.bert import BertEncoder
    recomputed, real = [], BertEncoder._recompute_layer

    def recompute_and_record(self, i, *args):
        recomputed.append((self.model, i))
        return real(self, i, *args)
    monkeypatch.setattr(BertEncoder, "_recompute_layer", recompute_and_record)
    return recomputed
