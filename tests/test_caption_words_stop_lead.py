"""Stop-initial words get their own lead (``aligner._forced.STOP_LEAD_MS``).

Oracle: the wild generator's truth (``avalign.synth.make_wild_clip``) on TUNE seed 1000: SRT/VTT captions of espeak-ng
speech over a noise bed (a floor, so the lead applies), 58 words, 24 of them starting with a stop (P B T D K G).
pocketsphinx dates stop-initial words about 10 ms earlier than the others: with one lead for every word their signed
median was -14.6 ms here (main at 0f3a21a); with the stop lead, -4.6 ms.
"""
from __future__ import annotations

import numpy as np
import pytest

from aligner.estimators import STOP_LEAD_MS, shared_decoder

from tests.conftest import caption_word_errors_ms, first_caption_lead_shifts_ms

pytest.importorskip("pocketsphinx")


@pytest.fixture(scope="module")
def clip(tune1000_captions):
    """(truth record, audio, captions) of TUNE seed 1000 (``conftest.tune1000_captions``)."""
    return tune1000_captions


def _is_stop(words) -> np.ndarray:
    decoder = shared_decoder()
    return np.array([decoder.lookup_word(w.text.lower()).split()[0] in ("P", "B", "T", "D", "K", "G") for w in words])


@pytest.mark.slow
def test_stop_initial_words_are_not_early(clip) -> None:
    out, errors_ms = caption_word_errors_ms(*clip)
    stop = _is_stop(out.words)
    assert stop.sum() >= 20
    # Measured -4.6 ms (one lead for every word: -14.6 ms).
    assert abs(np.median(errors_ms[stop])) <= 8.0, np.round(errors_ms[stop], 1)
    assert np.median(np.abs(errors_ms)) <= 20.0, np.round(errors_ms, 1)


@pytest.mark.slow
def test_stop_lead_moves_only_stop_initial_starts(clip) -> None:
    with_lead, shift_ms, stop_shift_ms = first_caption_lead_shifts_ms(*clip, stop_lead=False)
    stop = _is_stop(with_lead)
    assert stop.any() and (~stop).any()
    np.testing.assert_allclose(shift_ms[stop], STOP_LEAD_MS, atol=1e-6)
    np.testing.assert_allclose(shift_ms[~stop], 0.0, atol=1e-6)
    np.testing.assert_allclose(stop_shift_ms, 0.0, atol=1e-6)
