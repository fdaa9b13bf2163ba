"""Word boundaries inside connected speech get their own lead (``aligner._forced.CONNECTED_LEAD_MS``), starts after a
pause theirs (``AFTER_PAUSE_LEAD_MS``).

Oracle: the wild generator's truth (``avalign.synth.make_wild_clip``) on TUNE seed 1000: SRT/VTT captions of espeak-ng
speech over a noise bed (a floor, so the lead applies), 58 words, 43 of them after a caption's first word (inside
connected speech: espeak-ng leaves no pause inside a caption). With one lead for every word pocketsphinx dated those
late: signed median +13.7 ms, all words' |error| median 13.1 ms (main at 33a5092); with the context lead +6.7 and
9.3 ms.
The lead was chosen on TUNE and praatio's human-timed words (BENCHMARKS.md, "Caption words: a lead by context").
"""
from __future__ import annotations

import numpy as np
import pytest

from aligner.estimators import AFTER_PAUSE_LEAD_MS, CONNECTED_LEAD_MS

from tests.conftest import caption_word_errors_ms, first_caption_lead_shifts_ms

pytest.importorskip("pocketsphinx")


@pytest.fixture(scope="module")
def clip(tune1000_captions):
    """(truth record, audio, captions) of TUNE seed 1000 (``conftest.tune1000_captions``)."""
    return tune1000_captions


@pytest.mark.slow
def test_words_inside_connected_speech_are_not_late(clip) -> None:
    out, errors_ms = caption_word_errors_ms(*clip)
    first = np.array([k == 0 for span in out.spans for k, _ in enumerate(span.words)])
    assert (~first).sum() >= 40
    # Measured +6.7 ms inside connected speech, 9.3 ms |error| median (one lead for every word: +13.7, 13.1 ms).
    assert abs(np.median(errors_ms[~first])) <= 10.0, np.round(errors_ms[~first], 1)
    assert np.median(np.abs(errors_ms)) <= 11.0, np.round(errors_ms, 1)


@pytest.mark.slow
def test_context_lead_moves_boundaries_by_context(clip) -> None:
    with_lead, start_shift_ms, stop_shift_ms = first_caption_lead_shifts_ms(*clip, context_lead=False)
    assert len(with_lead) >= 3
    # The window was widened before the caption and padded: its first word starts after a pause; espeak-ng's words
    # inside the caption abut (no pause aligned between them), so each later start and the stop before it move together.
    np.testing.assert_allclose(start_shift_ms[0], AFTER_PAUSE_LEAD_MS, atol=1e-6)
    np.testing.assert_allclose(start_shift_ms[1:], CONNECTED_LEAD_MS, atol=1e-6)
    np.testing.assert_allclose(stop_shift_ms[:-1], CONNECTED_LEAD_MS, atol=1e-6)
    np.testing.assert_allclose(stop_shift_ms[-1], 0.0, atol=1e-6)
