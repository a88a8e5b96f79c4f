"""Progress bars: tqdm's automatic choice (widgets in a Jupyter notebook, text in a terminal), imported without
`tqdm.auto`'s asyncio support, which costs ~6 MB of memory in every process (each rank of `--procs` too) and
which minibert does not use. Without ipywidgets a notebook gets text bars, not a warning in every cell that
imports minibert."""

import importlib.util
import warnings

from tqdm.std import TqdmExperimentalWarning

if importlib.util.find_spec("ipywidgets") is None:
    from tqdm.std import tqdm
else:
    with warnings.catch_warnings():  # as tqdm.auto does: no warning that the notebook bars are "experimental"
        warnings.simplefilter("ignore", TqdmExperimentalWarning)
        from tqdm.autonotebook import tqdm

__all__ = ["tqdm"]
