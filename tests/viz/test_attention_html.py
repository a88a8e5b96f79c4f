"""The interactive attention page: self-contained, its data equal to the model's attention, and working in a real
headless Chromium (no console errors, switching layer redraws, hovering a token shows that token's weights)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from viz_helpers import assert_png_has_content, reference_attentions

from minibert.cli import main

TEXT = "the cat sat on the mat because it was tired"


@pytest.fixture(scope="module")
def page(tiny_model_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("html") / "attention.html"
    assert main(["attention", "--model", str(tiny_model_dir), TEXT, "--html", str(out)]) == 0
    return out


def embedded_data(html_text):
    match = re.search(r'<script id="attention-data" type="application/json">(.*?)</script>', html_text, re.S)
    assert match, "no embedded attention data"
    return json.loads(match.group(1))


def test_page_is_self_contained(page):
    text = page.read_text(encoding="utf-8")
    assert "<link" not in text and " src=" not in text and "url(" not in text and "@import" not in text
    # The only URL in the page is the SVG namespace name, which is never fetched.
    assert set(re.findall(r"https?://[^\s\"'<>)]+", text)) <= {"http://www.w3.org/2000/svg"}


def test_embedded_weights_are_the_models(page, tiny_model_dir):
    data = embedded_data(page.read_text(encoding="utf-8"))
    tokens, expected = reference_attentions(tiny_model_dir, TEXT)  # (L, A, T, T)
    assert data["tokens"] == tokens
    got = np.array(data["attention"])
    assert got.shape == expected.shape == (2, 2, len(tokens), len(tokens))
    np.testing.assert_allclose(got, expected, atol=1e-4)  # stored with 4 decimals



def test_the_text_is_encoded_once(tiny_model_dir, tmp_path, capsys, monkeypatch):
    """The page's size is checked on the same encoding the model then runs on (it was encoded twice)."""
    from minibert.tokenizer import WordPieceTokenizer
    calls = []
    encode = WordPieceTokenizer.encode
    monkeypatch.setattr(WordPieceTokenizer, "encode", lambda self, text, *a, **k: calls.append(text) or
                        encode(self, text, *a, **k))
    out = tmp_path / "once.html"
    assert main(["attention", "--model", str(tiny_model_dir), TEXT, "--html", str(out)]) == 0
    assert calls == [TEXT]
    assert embedded_data(out.read_text(encoding="utf-8"))["tokens"] == ["[CLS]"] + TEXT.split() + ["[SEP]"]
    assert "12 tokens: [CLS] the cat sat" in capsys.readouterr().out

def test_script_end_tag_in_text_cannot_break_the_page(tiny_model_dir, tmp_path):
    out = tmp_path / "evil.html"
    evil = "the cat </script><script>window.pwned = 1</script> sat"
    assert main(["attention", "--model", str(tiny_model_dir), evil, "--html", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert text.count("</script>") == 2  # the data block's and the program's, nothing from the text
    assert embedded_data(text)["text"] == evil


def _drawn(browser):
    """What the line view shows now: its layer/head and the weight of every visible line."""
    return browser.run_js("""
        const svg = document.getElementById('lines');
        const lines = Array.from(svg.querySelectorAll('#edges line')).filter(l => l.style.display !== 'none');
        return {layer: svg.dataset.layer, head: svg.dataset.head,
                lines: lines.map(l => [Number(l.dataset.from), Number(l.dataset.to), Number(l.dataset.head),
                                       Number(l.getAttribute('stroke-opacity'))])};""")


def test_page_in_headless_chromium(page, tiny_model_dir, browser, tmp_path):
    tokens, expected = reference_attentions(tiny_model_dir, TEXT)  # (L, A, T, T)
    T = len(tokens)
    browser.get(page.as_uri())
    browser.wait_for("return document.body.dataset.ready === '1'")
    assert browser.console_errors() == []

    # Start: layer 0, head 0, every query-key pair drawn with opacity = its weight.
    start = _drawn(browser)
    assert (start["layer"], start["head"]) == ("0", "0")
    assert len(start["lines"]) == T * T
    drawn = np.zeros((T, T))
    for i, j, h, w in start["lines"]:
        assert h == 0
        drawn[i, j] = w
    np.testing.assert_allclose(drawn, expected[0, 0], atol=1e-4)

    # Pick layer 1 in the drop-down (a real click on the option): the drawing changes to layer 1's weights.
    browser.click("#layer option[value='1']")
    after = _drawn(browser)
    assert after["layer"] == "1"
    drawn1 = np.zeros((T, T))
    for i, j, _, w in after["lines"]:
        drawn1[i, j] = w
    np.testing.assert_allclose(drawn1, expected[1, 0], atol=1e-4)
    assert np.abs(drawn1 - drawn).max() > 0.05  # what is drawn really changed
    assert browser.run_js("return location.hash") == "#layer=1&head=0"

    # Hover "it" on the left: only its lines stay, and the numbers next to the keys are its attention row.
    it = tokens.index("it")
    browser.hover(f"g.token.left[data-index='{it}']")
    hovered = _drawn(browser)
    assert sorted(j for i, j, _, _ in hovered["lines"]) == list(range(T))
    assert all(i == it for i, _, _, _ in hovered["lines"])
    shown = browser.run_js("return Array.from(document.querySelectorAll('text.weight.right'))"
                           ".map(t => t.textContent)")
    assert all(re.fullmatch(r"\d\.\d\d", t) for t in shown)  # two decimals
    np.testing.assert_allclose([float(t) for t in shown], expected[1, 0, it], atol=0.005 + 1e-4)
    status = browser.run_js("return document.getElementById('status').textContent")
    assert f"\u201cit\u201d attends most to \u201c{tokens[int(expected[1, 0, it].argmax())]}\u201d" in status

    # All heads at once: lines of both heads, each in its head's colour.
    browser.click("#head option[value='all']")
    heads = {h for _, _, h, _ in _drawn(browser)["lines"]}
    assert heads == {0, 1}

    shot = browser.screenshot(tmp_path / "attention_page.png")
    assert_png_has_content(shot, min_width=800, min_height=600)
    assert browser.console_errors() == []


def test_url_hash_selects_layer_and_head(page, tiny_model_dir, browser):
    browser.get(page.as_uri() + "#layer=1&head=1")
    browser.wait_for("return document.body.dataset.ready === '1'")
    state = _drawn(browser)
    assert (state["layer"], state["head"]) == ("1", "1")
    assert browser.run_js("return [document.getElementById('layer').value, document.getElementById('head').value]") \
        == ["1", "1"]
    assert browser.console_errors() == []
