"""Progress bars: tqdm's automatic choice (widgets in a Jupyter notebook, text in a terminal), imported without
`tqdm.auto`'s asyncio support, which costs ~6 MB of memory in every process (each rank of `--procs` too) and
which minibert does not use."""

import warnings

from tqdm.std import TqdmExperimentalWarning

with warnings.catch_warnings():  # as tqdm.auto does: no warning that the notebook bars are "experimental"
    warnings.simplefilter("ignore", TqdmExperimentalWarning)
    from tqdm.autonotebook import tqdm

__all__ = ["tqdm"]
