"""Counts in words, for the lines the commands print: "1 step", "2 steps", "0 examples"."""


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """f"{n:,} {noun}", the noun in the plural (noun + "s" unless `plural` is given) unless n is 1."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"
