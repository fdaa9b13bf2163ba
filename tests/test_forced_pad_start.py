"""``forced_align_words(pad_start=...)``: None pads a window whose first 30 ms are quiet, True always, False never.

Oracle: espeak-ng's word starts (``avalign.synth.synthesize_speech``, in ``tests.test_forced._speech_clip``: speech
0.3 s into a clip with a noise floor 30 dB down). Two windows per sentence:

::

    gap window      |<- 40 ms floor ->|every   morning  maria …      starts in the gap before the first word
    speech window            mor|ning   maria   walks …              starts half-way between two word starts

Unpadded, pocketsphinx has no room for its silence model and puts the first word on the window's first frame (the
window start plus the lead correction, ``FORCED_LEAD_MS``); padded, a word that it puts in the padding is clamped to
the window start.
"""
from __future__ import annotations

import pytest

from aligner.estimators import FORCED_LEAD_MS, forced_align_words, shared_decoder
from tests.test_forced import SENTENCES, _speech_clip

pytest.importorskip("pocketsphinx")

HALF_FRAME_SECONDS = 0.005
"""Pocketsphinx's 10 ms frames, averaged over two passes half a frame apart."""


def _aligned(audio, text: str, start_seconds: float) -> dict:
    """``{pad_start: [(word, start_seconds, stop_seconds), …]}`` for None, True and False on one window."""
    return {pad: [(w.text, w.start_seconds, w.stop_seconds)
                  for w in forced_align_words(audio, text, start_seconds, audio.stop_seconds, decoder=shared_decoder(),
                                              pad_start=pad)]
            for pad in (None, True, False)}


@pytest.mark.parametrize("text", SENTENCES)
def test_a_window_starting_in_a_gap_is_padded_unless_pad_start_is_false(text):
    audio, true_starts = _speech_clip(text)
    start = true_starts[0] - 0.040
    got = _aligned(audio, text, start)
    assert got[None] == got[True]  # a quiet start is padded by default
    first_default, first_unpadded = got[None][0][1], got[False][0][1]
    assert abs(first_default - true_starts[0]) <= 0.015, (first_default, true_starts[0])
    # Never padded: the first word is put on the window's first frame, before the truth.
    assert abs(first_unpadded - (start + FORCED_LEAD_MS / 1000)) <= HALF_FRAME_SECONDS, (first_unpadded, start)
    assert first_unpadded < first_default


@pytest.mark.parametrize("text", SENTENCES)
def test_a_window_starting_in_speech_is_padded_only_with_pad_start_true(text):
    audio, true_starts = _speech_clip(text)
    start = (true_starts[1] + true_starts[2]) / 2  # inside the second word (espeak's words follow without a gap)
    rest = " ".join(text.split()[1:])
    got = _aligned(audio, rest, start)
    assert got[None] == got[False]  # a loud start is not padded by default
    # Unpadded, the cut word starts on the first frame (plus the lead); padded, it is put in the padding and clamped
    # to the window start.
    assert abs(got[None][0][1] - (start + FORCED_LEAD_MS / 1000)) <= HALF_FRAME_SECONDS, (got[None][0], start)
    assert got[True][0][1] == pytest.approx(start, abs=1e-9)
    assert [w[0] for w in got[True]] == [w[0] for w in got[None]]
