"""What a model's forward returns: attribute access, like Hugging Face's ModelOutput."""


class ModelOutput(dict):
    """A dict whose keys are also attributes. Every forward sets all its fields (None where not computed), so
    a misspelt field raises instead of quietly giving None."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"this output has no field {name!r}; it has {', '.join(self)}") from None

    def __setattr__(self, name, value):
        self[name] = value
