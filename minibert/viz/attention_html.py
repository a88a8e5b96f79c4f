"""An interactive attention view in one self-contained HTML file (like BertViz's head view).

Everything is inline: the CSS, the JavaScript and the attention weights (JSON). The page needs no network and
no server: open it from disk. Pick a layer and a head (or all heads); hover or focus a token on the left to see
where it looks, a token on the right to see who looks at it. The heatmap below shows the same head as a matrix.

Page state a test (or a curious user) can read: `<svg id="lines" data-layer data-head>`, every drawn line's
`data-from`, `data-to`, `data-head`, `data-weight`, `<body data-ready="1">` once drawn, and the URL hash
(#layer=2&head=3) that is read on load and kept up to date.
"""

from __future__ import annotations

import html
import json

import numpy as np

from minibert.viz.attention_data import AttentionResult
from minibert.viz.model_select import model_label

DECIMALS = 4  # weights are stored rounded: 4 decimals is far below what the eye sees, and keeps the file small
MAX_WEIGHTS = 4_000_000  # L*A*T*T numbers in the page: about 6 bytes each, so at most ~25 MB of HTML


def check_fits_page(num_tokens: int, num_layers: int, num_heads: int, note: str = "") -> None:
    """A text too long for one page is one line; the token count is known once the text is tokenized, so the
    command checks this before the model loads and runs. note: encode_for_model's, when it cut the text (said
    in the same line: the user's text was longer still)."""
    T, L, A = num_tokens, num_layers, num_heads
    if L * A * T * T > MAX_WEIGHTS:
        raise ValueError(f"{T} tokens x {L} layers x {A} heads is {L * A * T * T:,} attention weights, too many for "
                         f"one page (limit {MAX_WEIGHTS:,}, about {MAX_WEIGHTS * 6 // 10**6} MB); use a shorter text "
                         f"(at most about {int((MAX_WEIGHTS / (L * A)) ** 0.5)} tokens for this model)"
                         + (f"; {note}" if note else ""))


def attention_page(result: AttentionResult, layer: int = 0, head: int | None = 0) -> str:
    """The HTML text of the page; `head=None` starts on "all heads"."""
    L, A, T, _ = result.attentions.shape
    check_fits_page(T, L, A)
    data = {
        "tokens": result.tokens,
        "tokenTypes": result.token_type_ids,
        "numLayers": result.num_layers,
        "numHeads": result.num_heads,
        # attention[layer][head][query][key], each query row summing to 1
        "attention": np.round(result.attentions.astype(np.float64), DECIMALS).tolist(),
        "text": result.text,
        "textPair": result.text_pair,
        "model": model_label(result.model_name) if result.model_name else "",
        "note": result.note,
        "start": {"layer": layer, "head": "all" if head is None else head},
    }
    # "</" inside a <script> would end it early (a token could be "</script>"): JSON allows "<\/" instead.
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
    title = f"minibert attention: {result.text[:60]}"
    return (PAGE.replace("__TITLE__", html.escape(title))
                .replace("__DATA__", payload))




PAGE = r"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>__TITLE__</title>
<style>
  body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px; color: #222; background: #fff; }
  h1 { font-size: 20px; margin: 0 0 4px 0; }
  #sentence { color: #444; margin-bottom: 4px; }
  #note { color: #a15c00; margin-bottom: 8px; }
  #controls { display: flex; gap: 18px; align-items: center; margin: 12px 0; flex-wrap: wrap; }
  #controls label { font-weight: 600; }
  select { font-size: 14px; padding: 2px 4px; }
  #status { min-height: 1.4em; color: #333; margin: 6px 0 10px 0; }
  .views { display: flex; gap: 32px; align-items: flex-start; flex-wrap: wrap; }
  svg text { font-size: 14px; dominant-baseline: middle; }
  .token { cursor: pointer; }
  .token:focus { outline: none; }
  .token.active text.word { font-weight: 700; }
  .token rect.bg { fill: transparent; }
  .token.active rect.bg { fill: #ffe9a8; }
  .token:hover rect.bg, .token:focus rect.bg { fill: #fff3cf; }
  text.weight { fill: #555; font-size: 12px; font-variant-numeric: tabular-nums; }
  .caption { font-size: 13px; color: #555; }
  #legend span { display: inline-block; padding: 1px 6px; margin: 1px; border-radius: 3px; color: #fff;
                 font-size: 12px; }
</style>
</head>
<body>
<h1>Attention, layer by layer</h1>
<div id="sentence"></div>
<div id="note"></div>
<div id="controls">
  <span><label for="layer">Layer</label> <select id="layer"></select></span>
  <span><label for="head">Head</label> <select id="head"></select></span>
  <span id="legend"></span>
</div>
<div id="status" aria-live="polite"></div>
<div class="views">
  <div>
    <div class="caption">left: the token that attends (query) &middot; right: the tokens it attends to (key)
      &middot; line strength = weight</div>
    <svg id="lines" role="img" aria-label="attention lines"></svg>
  </div>
  <div>
    <div class="caption">the same head as a matrix: row = query, column = key</div>
    <svg id="matrix" role="img" aria-label="attention matrix"></svg>
  </div>
</div>
<script id="attention-data" type="application/json">__DATA__</script>
<script>
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("attention-data").textContent);
  const T = data.tokens.length, L = data.numLayers, A = data.numHeads;
  const SVG = "http://www.w3.org/2000/svg";
  const ROW = 24, TOP = 16, LEFT_X = 190, RIGHT_X = 420, WEIGHT_LEFT_X = 8, WEIGHT_RIGHT_X = 560;
  const state = { layer: 0, head: 0, focus: null };  // focus: {side: "left"|"right", index}
  const linesSvg = document.getElementById("lines"), matrixSvg = document.getElementById("matrix");
  const layerSelect = document.getElementById("layer"), headSelect = document.getElementById("head");
  const status = document.getElementById("status");

  function headColor(h) { return "hsl(" + Math.round(h * 360 / A) + ", 70%, 42%)"; }
  function el(name, attrs, parent) {
    const node = document.createElementNS(SVG, name);
    for (const k in attrs) node.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(node);
    return node;
  }
  function heads() { return state.head === "all" ? [...Array(A).keys()] : [state.head]; }
  function weight(h, i, j) { return data.attention[state.layer][h][i][j]; }
  function meanWeight(i, j) {  // the number shown next to a token: the head's weight, or the mean over heads
    const hs = heads();
    let s = 0;
    for (const h of hs) s += weight(h, i, j);
    return s / hs.length;
  }
  function label(i) { return data.tokens[i]; }

  // ---------------------------------------------------------------- controls
  for (let l = 0; l < L; l++) layerSelect.add(new Option("layer " + l, String(l)));
  headSelect.add(new Option("all heads", "all"));
  for (let h = 0; h < A; h++) headSelect.add(new Option("head " + h, String(h)));
  const legend = document.getElementById("legend");
  for (let h = 0; h < A; h++) {
    const s = document.createElement("span");
    s.textContent = String(h);
    s.style.background = headColor(h);
    s.title = "head " + h;
    legend.appendChild(s);
  }
  document.getElementById("sentence").textContent = "\u201c" + data.text + "\u201d" +
      (data.textPair ? " / \u201c" + data.textPair + "\u201d" : "") + (data.model ? "  \u2014 " + data.model : "");
  document.getElementById("note").textContent = data.note || "";

  function readHash() {
    const params = new URLSearchParams(location.hash.slice(1));
    const l = parseInt(params.get("layer"), 10), h = params.get("head");
    if (l >= 0 && l < L) state.layer = l;
    if (h === "all") state.head = "all";
    else if (h !== null && parseInt(h, 10) >= 0 && parseInt(h, 10) < A) state.head = parseInt(h, 10);
  }
  function writeHash() {
    const hash = "#layer=" + state.layer + "&head=" + state.head;
    if (location.hash !== hash) history.replaceState(null, "", hash);
  }

  // ---------------------------------------------------------------- the line view
  const height = TOP * 2 + T * ROW;
  linesSvg.setAttribute("width", WEIGHT_RIGHT_X + 50);
  linesSvg.setAttribute("height", height);
  const lineLayer = el("g", { id: "edges" }, linesSvg);
  const tokenLayer = el("g", {}, linesSvg);
  const y = i => TOP + i * ROW + ROW / 2;
  const tokenNodes = { left: [], right: [] }, weightNodes = { left: [], right: [] };
  for (const side of ["left", "right"]) {
    for (let i = 0; i < T; i++) {
      const g = el("g", { class: "token " + side, "data-side": side, "data-index": i, tabindex: 0,
                          role: "button", "aria-label": label(i) }, tokenLayer);
      const x = side === "left" ? LEFT_X : RIGHT_X;
      el("rect", { class: "bg", x: side === "left" ? x - 150 : x - 6, y: y(i) - ROW / 2 + 2, width: 156,
                   height: ROW - 4, rx: 3 }, g);
      const t = el("text", { class: "word", x: side === "left" ? x - 6 : x + 6, y: y(i),
                             "text-anchor": side === "left" ? "end" : "start" }, g);
      t.textContent = label(i);
      if (data.tokenTypes[i] === 1) t.setAttribute("fill", "#1f5fa8");  // second segment of a pair
      g.addEventListener("mouseenter", () => setFocus(side, i));
      g.addEventListener("focus", () => setFocus(side, i));
      g.addEventListener("mouseleave", () => setFocus(null));
      g.addEventListener("blur", () => setFocus(null));
      tokenNodes[side].push(g);
      const w = el("text", { class: "weight " + side, "data-index": i,
                             x: side === "left" ? WEIGHT_LEFT_X : WEIGHT_RIGHT_X, y: y(i) }, linesSvg);
      weightNodes[side].push(w);
    }
  }

  function drawLines() {
    lineLayer.replaceChildren();
    linesSvg.dataset.layer = String(state.layer);
    linesSvg.dataset.head = String(state.head);
    const hs = heads();
    const minShown = hs.length > 1 ? 0.02 : 0;  // all heads: skip near-zero lines to keep the page fast
    for (const h of hs) {
      for (let i = 0; i < T; i++) {
        for (let j = 0; j < T; j++) {
          const w = weight(h, i, j);
          if (w < minShown) continue;
          el("line", { x1: LEFT_X, y1: y(i), x2: RIGHT_X, y2: y(j), stroke: headColor(h),
                       "stroke-width": 2, "stroke-opacity": w, "data-from": i, "data-to": j, "data-head": h,
                       "data-weight": w }, lineLayer);
        }
      }
    }
    applyFocus();
  }

  function applyFocus() {
    const f = state.focus;
    for (const line of lineLayer.children) {
      let shown = true;
      if (f) shown = Number(line.dataset[f.side === "left" ? "from" : "to"]) === f.index;
      line.style.display = shown ? "" : "none";
    }
    for (const side of ["left", "right"]) {
      tokenNodes[side].forEach((g, i) => g.classList.toggle("active", !!f && f.side === side && f.index === i));
      weightNodes[side].forEach(w => { w.textContent = ""; });
    }
    if (!f) {
      status.textContent = "Layer " + state.layer + ", " + (state.head === "all" ? "all heads" : "head " + state.head) +
          ". Hover (or Tab to) a token on the left to see where it looks; on the right, to see who looks at it.";
      highlightMatrix(null);
      return;
    }
    const other = f.side === "left" ? "right" : "left";
    let best = 0;
    for (let k = 0; k < T; k++) {
      const w = f.side === "left" ? meanWeight(f.index, k) : meanWeight(k, f.index);
      weightNodes[other][k].textContent = w.toFixed(2);
      if (w > (f.side === "left" ? meanWeight(f.index, best) : meanWeight(best, f.index))) best = k;
    }
    const what = state.head === "all" ? " (mean over heads)" : "";
    status.textContent = f.side === "left"
      ? "\u201c" + label(f.index) + "\u201d attends most to \u201c" + label(best) + "\u201d" + what
      : "\u201c" + label(f.index) + "\u201d gets the most attention from \u201c" + label(best) + "\u201d" + what;
    highlightMatrix(f);
  }

  function setFocus(side, index) {
    state.focus = side ? { side: side, index: index } : null;
    applyFocus();
  }

  // ---------------------------------------------------------------- the matrix view
  const CELL = Math.max(8, Math.min(28, Math.floor(420 / T))), MLEFT = 120, MTOP = 110;
  matrixSvg.setAttribute("width", MLEFT + T * CELL + 10);
  matrixSvg.setAttribute("height", MTOP + T * CELL + 10);
  const cells = [];
  for (let i = 0; i < T; i++) {
    const rowLabel = el("text", { x: MLEFT - 6, y: MTOP + i * CELL + CELL / 2, "text-anchor": "end",
                                  "font-size": Math.min(13, CELL) }, matrixSvg);
    rowLabel.textContent = label(i);
    const colLabel = el("text", { x: 0, y: 0, "font-size": Math.min(13, CELL),
                                  transform: "translate(" + (MLEFT + j0(i)) + "," + (MTOP - 6) + ") rotate(-60)" },
                        matrixSvg);
    colLabel.textContent = label(i);
    cells.push([]);
    for (let j = 0; j < T; j++) {
      const c = el("rect", { x: MLEFT + j * CELL, y: MTOP + i * CELL, width: CELL - 1, height: CELL - 1,
                             "data-row": i, "data-col": j }, matrixSvg);
      el("title", {}, c);
      cells[i].push(c);
    }
  }
  function j0(j) { return j * CELL + CELL / 2; }
  function drawMatrix() {
    for (let i = 0; i < T; i++) {
      for (let j = 0; j < T; j++) {
        const w = meanWeight(i, j);
        const c = cells[i][j];
        c.setAttribute("fill", state.head === "all" ? "rgb(40,40,40)" : headColor(state.head));
        c.setAttribute("fill-opacity", Math.max(0.03, w));
        c.dataset.weight = String(w);
        c.firstChild.textContent = label(i) + " \u2192 " + label(j) + ": " + w.toFixed(3);
      }
    }
  }
  function highlightMatrix(f) {
    for (let i = 0; i < T; i++) {
      for (let j = 0; j < T; j++) {
        const on = !f || (f.side === "left" ? i === f.index : j === f.index);
        cells[i][j].setAttribute("stroke", on && f ? "#000" : "none");
      }
    }
  }

  // ---------------------------------------------------------------- wiring
  function render() {
    layerSelect.value = String(state.layer);
    headSelect.value = String(state.head);
    drawLines();
    drawMatrix();
    writeHash();
  }
  layerSelect.addEventListener("change", () => { state.layer = Number(layerSelect.value); render(); });
  headSelect.addEventListener("change", () => {
    state.head = headSelect.value === "all" ? "all" : Number(headSelect.value);
    render();
  });
  window.addEventListener("hashchange", () => { readHash(); render(); });

  state.layer = data.start.layer;
  state.head = data.start.head;
  readHash();
  render();
  window.minibertAttention = { data: data, state: state, render: render, setFocus: setFocus };
  document.body.dataset.ready = "1";
})();
</script>
</body>
</html>
"""
