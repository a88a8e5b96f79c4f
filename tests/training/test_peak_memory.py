import shlex
import subprocess
import sys

import pytest

from minibert.training.memory import peak_rss_mb

# A child process that allocates and touches N MB, frees it, then prints peak_rss_mb() before and after.
CHILD = """
import sys
from minibert.training.memory import peak_rss_mb
before = peak_rss_mb()
block = bytearray(int(sys.argv[1]) * 1_000_000)  # zero-filled: every page is touched
del block
print(before, peak_rss_mb())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux: ru_maxrss in KiB, a POSIX shell")
def test_peak_rss_mb_sees_a_freed_allocation_and_reports_megabytes():
    # Through a shell that forks: a process started straight from this one would inherit this (possibly large)
    # process's peak in its ru_maxrss, since Linux carries the peak across exec(); a fork starts from zero.
    command = f"{shlex.quote(sys.executable)} -c {shlex.quote(CHILD)} 200; exit $?"
    before, after = (float(x) for x in subprocess.run(
        ["sh", "-c", command], capture_output=True, text=True, check=True).stdout.split())
    assert 5 < before < 500  # an interpreter with minibert imported: megabytes, not KiB or bytes
    # The 200 MB block was freed before the second reading, but the peak remembers it.
    assert after - before == pytest.approx(200, abs=20)


def test_peak_rss_mb_never_decreases():
    first = peak_rss_mb()
    if first is None:
        pytest.skip("peak memory cannot be read on this platform")
    assert peak_rss_mb() >= first > 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/smaps_rollup is Linux's")
def test_proportional_mb_counts_pages_this_process_touches():
    # In a child process: in this one, garbage an earlier test left (collected while the block is made) or
    # memory malloc kept could offset the block's pages (CI once saw +0.6 MB).
    child = ("import sys\n"
             "from minibert.training.memory import peak_rss_mb, proportional_mb\n"
             "before = proportional_mb()\n"
             "block = bytearray(50_000_000)  # zero-filled: every page touched, and private (counted whole)\n"
             "print(before, proportional_mb(), peak_rss_mb())\n")
    before, after, peak = (float(x) for x in subprocess.run([sys.executable, "-c", child], capture_output=True,
                                                            text=True, check=True).stdout.split())
    assert 5 < before < peak + 1  # megabytes, and never more than the resident size
    assert after - before == pytest.approx(50, abs=8)


def test_proportional_peak_keeps_the_largest_sample(monkeypatch):
    from minibert.training import memory
    readings = iter([None, 12.0, 30.0, 20.0, None])
    monkeypatch.setattr(memory, "proportional_mb", lambda: next(readings))
    peak = memory.ProportionalPeak()
    assert [peak.sample() for _ in range(5)] == [None, 12.0, 30.0, 30.0, 30.0]


def test_training_step_lets_go_of_the_logits_before_its_backward(tmp_path, monkeypatch):
    # The MLM logits (M, V) are the largest array of a small model's step: the loop reads what it needs from
    # them (loss, accuracy) before the backward, so they are freed before the backward's own (M, V) work.
    import weakref

    from minibert.models.pretraining import BertForPreTraining
    from minibert.training.pretrain import pretrain
    from pretrain_helpers import synthetic_documents, tiny_settings, write_corpus

    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path / "cache"))
    real_forward, real_backward = BertForPreTraining.forward, BertForPreTraining.backward
    seen = {"logits": None, "alive_in_backward": []}

    def forward(self, *args, **kwargs):
        out = real_forward(self, *args, **kwargs)
        if kwargs.get("labels") is not None and self.training:
            seen["logits"] = weakref.ref(out.prediction_logits)
        return out

    def backward(self, *args, **kwargs):
        seen["alive_in_backward"].append(seen["logits"]() is not None)
        return real_backward(self, *args, **kwargs)

    monkeypatch.setattr(BertForPreTraining, "forward", forward)
    monkeypatch.setattr(BertForPreTraining, "backward", backward)
    corpus = write_corpus(tmp_path / "animals.txt", synthetic_documents(60))
    pretrain(tiny_settings(corpus, tmp_path / "runs", steps=3), log=lambda *a: None)
    assert seen["alive_in_backward"] == [False, False, False]
