"""Counts in words, for the lines the commands print: "1 step", "2 steps", "0 examples"."""


def counted(n: int | float, noun: str, plural: str | None = None) -> str:
    """f"{n:,} {noun}", the noun in the plural (noun + "s" unless `plural` is given) unless n is 1; a float as
    few digits as it needs ("1 minute", "0.5 minutes")."""
    number = f"{n:,}" if isinstance(n, int) else f"{n:g}"
    return f"{number} {noun if n == 1 else plural or noun + 's'}"
