"""minibert/_plural.py: counts in words for the lines the commands print."""

from minibert._plural import counted


def test_one_is_singular_and_every_other_count_plural():
    assert counted(1, "step") == "1 step"
    assert counted(0, "example") == "0 examples"
    assert counted(12_345, "step") == "12,345 steps"
    assert counted(2, "process", "processes") == "2 processes"


def test_a_float_takes_as_few_digits_as_it_needs():
    # --minutes is a float: "1 minute", not "1.0 minutes"
    assert counted(1.0, "minute") == "1 minute"
    assert counted(13.0, "minute") == "13 minutes"
    assert counted(0.5, "minute") == "0.5 minutes"
