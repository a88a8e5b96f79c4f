"""matplotlib, imported only when a picture is drawn.

Figures are made with matplotlib's object API (`matplotlib.figure.Figure`) and saved as PNG by the Agg
renderer, without pyplot: no display is needed, and a notebook's own pyplot backend is left alone.
"""

from __future__ import annotations

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
    """A Figure with constrained layout (labels never overlap the panels, the figure is drawn only once)."""
    require_matplotlib()
    from matplotlib.figure import Figure
    return Figure(figsize=figsize, layout="constrained", **kwargs)


def save_figure(fig, path, dpi=120) -> None:
    """Save a figure as PNG atomically (temp file + rename)."""
    from minibert.io.atomic import atomic_path
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=dpi)
