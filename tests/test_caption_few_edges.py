"""Captions whose energy answer rests on one caption edge (one sentence split into abutting captions, a music bed).

Oracle: the wild generator's truth (``avalign.synth.make_wild_clip``: the transcript's stamps are late by
``text_offset_ms``), on TUNE seeds, with the spec changed to the held-out wild5020's kind: a music bed, one
sentence (two or three captions, all but the first abutting the previous one, so a single caption start
follows a pause). In the "event" clip one of the spec's events is moved to just before the first word: a
sharp non-speech onset next to the only caption edge, which the caption-edge energy estimator takes for the
speech's start (measured before the fix: +89 ms off at confidence 1.00, forced alignment at chance).
"""
from __future__ import annotations

import dataclasses
import json

import pytest

import aligner
import loaders
from aligner.estimators import caption_edges, estimate_transcript_offsets

pytest.importorskip("pocketsphinx")

WRONG_MS = 25.0  # the target: |error| <= 25 ms for every answer


def _one_sentence_spec(seed: int):
    """The tune spec of ``seed`` with a music bed and only its first sentence, as SRT (odd seed) or VTT."""
    from avalign.synth import SENTENCES, TUNE_SEEDS, wild_specs

    assert seed in TUNE_SEEDS
    spec = wild_specs([seed])[0]
    sentence = spec.sentences[0] if spec.sentences else SENTENCES[seed % len(SENTENCES)]
    return dataclasses.replace(spec, key=f"one{seed}", bed="music", sentences=(sentence,), speech_everywhere=False,
                               talking_head=False, transcript_format="vtt" if seed % 2 == 0 else "srt")


def _generate(spec, directory):
    from avalign.synth import make_wild_clip

    try:
        record = make_wild_clip(spec, directory)
    except OSError as e:  # libespeak-ng or ffmpeg missing
        pytest.skip(f"wild generator unavailable: {e}")
    audio = loaders.read_audio(str(directory / record["media"]))
    captions = loaders.read_transcript(str(directory / record["transcript"]))
    return record, audio, captions


# Where the generator puts the first word of tune seed 1015's one-sentence clip (video timeline, seconds); the
# fixture checks it, so a changed generator fails here instead of silently testing nothing.
_FIRST_WORD_1015_SECONDS = 1.693
_EVENT_LEAD_SECONDS = 0.108


@pytest.fixture(scope="module")
def event_clip(tmp_path_factory):
    """Tune seed 1015, one sentence over music, the event nearest the first word moved to 108 ms before it."""
    spec = _one_sentence_spec(1015)
    nearest = min(range(len(spec.events)), key=lambda i: abs(spec.events[i].video_seconds - _FIRST_WORD_1015_SECONDS))
    events = list(spec.events)
    events[nearest] = dataclasses.replace(events[nearest], video_seconds=_FIRST_WORD_1015_SECONDS - _EVENT_LEAD_SECONDS)
    moved = dataclasses.replace(spec, key="ev1015", events=tuple(sorted(events, key=lambda e: e.video_seconds)))
    record, audio, captions = _generate(moved, tmp_path_factory.mktemp("few_edges_event"))
    assert record["words"][0]["start_seconds"] == pytest.approx(_FIRST_WORD_1015_SECONDS, abs=0.002)
    return record, audio, captions


@pytest.fixture(scope="module")
def plain_clip(tmp_path_factory):
    """Tune seed 1018, one sentence over music (no event moved): caption-edge energy is right there."""
    return _generate(_one_sentence_spec(1018), tmp_path_factory.mktemp("few_edges_plain"))


@pytest.mark.slow
def test_one_caption_edge_next_to_an_event_is_right_or_abstains(event_clip) -> None:
    record, audio, captions = event_clip
    assert not captions.words and caption_edges(captions) == 1, json.dumps(record["transcript"])
    estimate = aligner.estimate_transcript_offset(audio, captions, method="auto")
    truth = record["text_offset_ms"]
    if estimate.abstained:
        abstain = estimate.abstain_record()
        assert abstain["reason"] == "few_caption_edges", abstain
        assert "1 caption start(s) after a pause" in abstain["found"] and abstain["best_guess_ms"] is not None, abstain
        assert abstain["needed"] and abstain["hint"], abstain
    else:
        assert abs(estimate.text_offset_ms - truth) <= WRONG_MS, (estimate, truth)


@pytest.mark.slow
def test_one_caption_edge_confirmed_by_forced_alignment_is_kept(plain_clip) -> None:
    record, audio, captions = plain_clip
    assert caption_edges(captions) == 1
    estimate = aligner.estimate_transcript_offset(audio, captions, method="auto")
    assert not estimate.abstained, estimate.abstain_record()
    assert abs(estimate.text_offset_ms - record["text_offset_ms"]) <= WRONG_MS, (estimate, record["text_offset_ms"])
    assert estimate.method.startswith("span_onsets")  # the energy answer, confirmed


def test_caption_edges_counts_starts_after_a_pause() -> None:
    from avcore import Span, Transcript

    def captions(*times):
        return Transcript(spans=tuple(Span(f"w{i}", a, b) for i, (a, b) in enumerate(times)))

    assert caption_edges(captions((1.0, 2.0), (2.0, 3.0), (3.05, 4.0))) == 1  # abutting, then 50 ms apart
    assert caption_edges(captions((1.0, 2.0), (2.08, 3.0), (5.0, 6.0))) == 3


@pytest.mark.slow
def test_few_edges_need_the_confirmation_every_floor_answer_needs(tmp_path_factory) -> None:
    """REPORT23 (seen since 2026-12-06) wild23008's audio with wild23018's four VTT captions: two of them are spoken
    in the audio, 252 ms early, the other two are not. Fewer than 3 caption starts follow a pause; forced alignment
    puts the two spoken ones within 20 ms of the energy answer but at confidence 0.125 (two of four placed). Confirmed
    at 0.1, main answered -252.5 ms; at 0.2, as every other energy answer over a floor, it abstains."""
    from conftest import wild_clip

    audio_record, audio_dir = wild_clip(tmp_path_factory, 23008)
    text_record, text_dir = wild_clip(tmp_path_factory, 23018)
    audio = loaders.read_audio(str(audio_dir / audio_record["media"]))
    captions = loaders.read_transcript(str(text_dir / text_record["transcript"]))
    by_method = estimate_transcript_offsets(audio, captions)
    energy, forced, auto = by_method["energy"], by_method["forced"], by_method["auto"]
    assert energy.text_offset_ms == pytest.approx(-252.5, abs=2.0) and not captions.words
    assert abs(forced.best_guess_ms - energy.text_offset_ms) <= 20.0 and 0.1 <= forced.confidence < 0.2, forced
    assert auto.method == "abstain:few_caption_edges", auto
    assert "0.2" in auto.needed and auto.best_guess_ms == pytest.approx(energy.text_offset_ms)
