"""matplotlib, imported only when a picture is drawn.

Figures are made with matplotlib's object API (`matplotlib.figure.Figure`) and saved as PNG by the Agg
renderer, without pyplot: no display is needed, and a notebook's own pyplot backend is left alone.
"""

from __future__ import annotations

import warnings

INSTALL_HINT = "pip install 'minibert[plot]'  (or: pip install matplotlib)"


def require_matplotlib():
    """Import matplotlib, or raise an ImportError that says how to install it."""
    import sys
    if "matplotlib" not in sys.modules:
        # The first import creates ~25 MB of objects. At the end of a pre-training run, the process holds ~100 MB
        # that the training steps freed (see minibert/_malloc.py): give it back first, so the plot does not add
        # its memory on top of the training's peak.
        from minibert._malloc import release_freed_memory
        release_freed_memory()
    try:
        import matplotlib
    except ImportError:
        raise ImportError(f"drawing pictures needs matplotlib, an optional dependency: {INSTALL_HINT}") from None
    return matplotlib


def new_figure(figsize, **kwargs):
    """A Figure with constrained layout (labels never overlap the panels, the figure is drawn only once), on an
    Agg canvas, so that text can be measured before saving (`fit_to_figure`)."""
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=figsize, layout="constrained", **kwargs)
    FigureCanvasAgg(fig)
    return fig


MARGIN = 0.06  # inches left free around what is drawn when a figure has to grow
EDGE = 0.02  # inches: closer to an edge than this counts as cut off (a glyph's antialiasing reaches past its box)


def _wrap_text(text, renderer, max_width_px: float) -> None:
    """Break a text (a title) at its spaces into lines no wider than max_width_px, as measured by the renderer;
    a single word wider than that stays whole (fit_to_figure then widens the figure)."""
    if not text.get_text() or text.get_window_extent(renderer).width <= max_width_px:
        return
    lines = []
    for paragraph in text.get_text().split("\n"):
        line = ""
        for word in paragraph.split(" "):
            candidate = f"{line} {word}" if line else word
            text.set_text(candidate)
            if line and text.get_window_extent(renderer).width > max_width_px:
                lines.append(line.rstrip())
                line = word
            else:
                line = candidate
        lines.append(line)
    text.set_text("\n".join(lines))


def fit_to_figure(fig, dpi=120, max_rounds: int = 4) -> None:
    """Make sure nothing drawn is cut off by the edges of the picture: a title (the figure's, or a panel's)
    wider than the figure is wrapped onto more lines, and when something still sticks out (long tick labels
    under small panels, a long word next to a point) the figure grows by that much, so constrained layout can
    make room for it. A no-op for a figure whose content already fits."""
    fig.set_dpi(dpi)
    renderer = fig.canvas.get_renderer()
    room = (fig.get_figwidth() - 2 * MARGIN) * dpi
    for text in [*fig.texts, *(ax.title for ax in fig.axes)]:
        _wrap_text(text, renderer, room)
    for _ in range(max_rounds):
        with warnings.catch_warnings():  # a figure too small for its labels is what this loop is about to fix
            warnings.filterwarnings("ignore", message="constrained_layout not applied", category=UserWarning)
            fig.draw_without_rendering()  # runs the layout
        box = fig.get_tightbbox(renderer)  # inches, everything drawn
        width, height = fig.get_size_inches()
        grow_x = max(0.0, EDGE - box.x0) + max(0.0, box.x1 - (width - EDGE))
        grow_y = max(0.0, EDGE - box.y0) + max(0.0, box.y1 - (height - EDGE))
        if grow_x == 0.0 and grow_y == 0.0:
            return
        fig.set_size_inches(width + (grow_x + 2 * MARGIN if grow_x else 0.0),
                            height + (grow_y + 2 * MARGIN if grow_y else 0.0))


def save_figure(fig, path, dpi=120) -> None:
    """Save a figure as PNG atomically (temp file + rename), with nothing cut off at its edges
    (fit_to_figure)."""
    from minibert.io.atomic import atomic_path
    if not hasattr(fig.canvas, "get_renderer"):  # a Figure not made by new_figure
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        FigureCanvasAgg(fig)
    fit_to_figure(fig, dpi)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=dpi)
