"""A pocketsphinx decoder built before ``fork`` aligns in the forked child exactly as in the parent.

What ``make_dataset`` / ``make_loader`` rely on: they build the process's decoder (``shared_decoder``) before their
workers are forked, and each worker uses the inherited one instead of building its own. Oracle: the parent's own
alignment of the same words (identical words and times) and espeak-ng's word starts (within the aligner's error).
"""
from __future__ import annotations

import multiprocessing

import numpy as np
import pytest

from aligner.estimators import forced_align_words, shared_decoder
from tests.test_forced import SENTENCES, _speech_clip

pytest.importorskip("pocketsphinx")


def _words(audio, text: str) -> list[tuple[str, float, float]]:
    found = forced_align_words(audio, text, audio.start_seconds, audio.stop_seconds, decoder=shared_decoder())
    return [(w.text, w.start_seconds, w.stop_seconds) for w in found]


def _child(audio, text: str, out) -> None:
    out.send((id(shared_decoder()), shared_decoder.cache_info().misses, _words(audio, text)))
    out.close()


def test_a_decoder_built_before_fork_aligns_the_same_words_in_a_forked_child():
    text = SENTENCES[0]
    audio, true_starts = _speech_clip(text)
    decoder = shared_decoder()  # built (or already there) before the fork, unused by this test so far
    misses = shared_decoder.cache_info().misses
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(audio, text, send))
    child.start()
    send.close()
    decoder_id, child_misses, in_child = receive.recv()
    child.join(timeout=60)
    assert child.exitcode == 0
    in_parent = _words(audio, text)
    assert (decoder_id, child_misses) == (id(decoder), misses)  # the child used the inherited decoder, built none
    assert in_child == in_parent
    assert [w[0] for w in in_child] == text.rstrip(".").split()  # the words as written
    errors_ms = [abs(w[1] - t) * 1000 for w, t in zip(in_child, true_starts)]
    assert np.median(errors_ms) <= 25.0, np.round(errors_ms, 1)
