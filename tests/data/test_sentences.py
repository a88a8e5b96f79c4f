from minibert.data.sentences import split_sentences


def test_splits_at_end_punctuation_before_a_capital_or_digit():
    text = "It rained. Then it snowed! Did it stop? 2001 was dry."
    assert split_sentences(text) == ["It rained.", "Then it snowed!", "Did it stop?", "2001 was dry."]


def test_abbreviations_and_initials_do_not_end_sentences():
    text = "Mr. Smith met Dr. Jones in St. Louis. J. R. R. Tolkien wrote books, e.g. The Hobbit."
    assert split_sentences(text) == ["Mr. Smith met Dr. Jones in St. Louis.",
                                     "J. R. R. Tolkien wrote books, e.g. The Hobbit."]


def test_closing_quotes_stay_with_their_sentence():
    assert split_sentences('He said "Stop." Then he left.') == ['He said "Stop."', "Then he left."]


def test_no_split_before_lower_case_or_inside_numbers():
    assert split_sentences("Prices rose 3.5 percent. the end") == ["Prices rose 3.5 percent. the end"]


def test_whitespace_is_normalised_and_empty_text_gives_nothing():
    assert split_sentences("  One.\n\n  Two.  ") == ["One.", "Two."]
    assert split_sentences(" \n\t ") == []
