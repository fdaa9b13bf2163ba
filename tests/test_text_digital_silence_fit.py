"""Captions over exact digital silence: fits judged over a recording's floor, and the two rules that come with it.

Oracle: the generator's truth (``avalign.synth.make_clip``) on ``random_specs(33033, 30, prefix="ds")``, the
digital-silence tune set of BENCHMARKS.md ("Fits in digital silence judged over a recording's floor"; reported there
on two other seeds).

- ds0001: three captions, fewer than 3 starts after a pause. Energy's answer needs forced alignment's confirmation, and
  the espeak-ng words fitted under ``MIN_WORD_FIT`` on the exact zeros: ``few_caption_edges``. Over a floor 45 dB
  under the speech they fit, and the answer is within 3 ms of the truth.
- ds0006's audio with ds0021's whole transcript (a null pairing sharing no sentence): energy answered 374.8 ms.
  Forced alignment places none of the words; the answer now abstains.
- ds0010's pairs of consecutive captions: where energy abstained, forced alignment answered alone 37.6 and 65.2 ms off.
  Now these abstain (an energy peak within 20 ms of forced alignment's answer would have dated it).
"""
from __future__ import annotations

import pytest

from aligner.estimators import FIT_FLOOR_BELOW_DB, estimate_transcript_offsets, new_decoder
from avcore import Transcript

pytest.importorskip("pocketsphinx")

NEEDED = ("ds0001", "ds0006", "ds0010", "ds0021")


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    from conftest import random_spec_clips

    return random_spec_clips(tmp_path_factory, 33033, 30, "ds", NEEDED)


def _auto(audio, transcript):
    return estimate_transcript_offsets(audio, transcript, methods=("auto",), decoder=new_decoder())["auto"]


@pytest.mark.slow
def test_own_captions_fit_over_a_floor_and_confirm_the_energy_answer(ds):
    record, audio, captions = ds("ds0001")
    assert FIT_FLOOR_BELOW_DB == 45.0
    by_method = estimate_transcript_offsets(audio, captions, methods=("energy", "forced", "auto"), decoder=new_decoder())
    energy, forced, auto = by_method["energy"], by_method["forced"], by_method["auto"]
    assert not energy.abstained and not forced.abstained, forced  # main: words_do_not_match_audio
    assert not auto.abstained, auto  # main: few_caption_edges
    assert auto.text_offset_ms == pytest.approx(record["text_offset_ms"], abs=5.0)


@pytest.mark.slow
def test_energy_on_another_clips_captions_abstains_when_no_word_is_placed(ds):
    _, audio, _ = ds("ds0006")
    _, _, other = ds("ds0021")
    auto = _auto(audio, other)
    assert auto.method == "abstain:words_do_not_match_audio", auto
    assert auto.best_guess_ms is not None and "places none of their words" in auto.found


@pytest.mark.slow
def test_forced_alignment_alone_does_not_answer_captions_in_digital_silence(ds):
    record, audio, captions = ds("ds0010")
    alone_errors_ms = []
    for first in range(len(captions.spans) - 1):
        pair = Transcript(captions.spans[first:first + 2])
        by_method = estimate_transcript_offsets(audio, pair, methods=("energy", "forced", "auto"), decoder=new_decoder())
        energy, forced, auto = by_method["energy"], by_method["forced"], by_method["auto"]
        if energy.abstained and not forced.abstained:
            alone_errors_ms.append(abs(forced.text_offset_ms - record["text_offset_ms"]))
            assert auto.method == "abstain:forced_alone_in_digital_silence", auto
            assert auto.best_guess_ms == forced.text_offset_ms
    assert len(alone_errors_ms) == 2 and min(alone_errors_ms) > 30.0, alone_errors_ms  # 37.6 and 65.2 ms
