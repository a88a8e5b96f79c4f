"""What a model's forward returns: attribute access, like Hugging Face's ModelOutput."""


class ModelOutput(dict):
    """A dict whose keys are also attributes; a missing attribute is None."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self.get(name)

    def __setattr__(self, name, value):
        self[name] = value
