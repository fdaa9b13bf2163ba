"""Another clip's transcript (a clean null pairing): ``auto`` abstains instead of answering confidently wrong.

Oracle: the wild generator (``avalign.synth.make_wild_clip``, TUNE seeds). Tune clip wild1016's audio (music bed, "Please
bring fresh bread and warm soup tonight.") with tune clip wild1015's WhisperX transcript ("Seven bright lamps glow
above quiet harbors."): no sentence and no run of 3 words in common, so no offset is right. Before the fix ``auto``
returned the word-onset energy answer (+415 ms at confidence 1.00; forced alignment at chance). wild1015's own
pairing is the control: the generator's ``text_offset_ms`` is the truth, and ``auto`` keeps its energy answer.
"""
from __future__ import annotations

import re

import pytest

import aligner
import loaders
from tests.conftest import wild_clip

pytest.importorskip("pocketsphinx")

AUDIO_SEED, TEXT_SEED = 1016, 1015
RIGHT_MS = 15.0


def _words(sentences) -> list[str]:
    return [w for w in re.sub(r"[^a-z' ]", " ", " ".join(sentences).lower()).split()]


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    from avalign.synth import TUNE_SEEDS, wild_specs

    assert AUDIO_SEED in TUNE_SEEDS and TEXT_SEED in TUNE_SEEDS
    out = {}
    for spec in wild_specs([AUDIO_SEED, TEXT_SEED]):
        record, directory = wild_clip(tmp_path_factory, spec.seed)  # made once per run (1016: bed-start test too)
        out[spec.seed] = (spec, record, loaders.read_audio(str(directory / record["media"])),
                          loaders.read_transcript(str(directory / record["transcript"])))
    return out


def test_pairing_is_a_clean_null(clips):
    """The fixture's premise: the transcript shares no sentence and no 3-word run with the audio's speech."""
    audio_spec, text_spec = clips[AUDIO_SEED][0], clips[TEXT_SEED][0]
    assert not set(audio_spec.sentences) & set(text_spec.sentences)
    a, t = _words(audio_spec.sentences), _words(text_spec.sentences)
    assert not {tuple(a[i:i + 3]) for i in range(len(a) - 2)} & {tuple(t[i:i + 3]) for i in range(len(t) - 2)}
    assert clips[TEXT_SEED][3].words, "the null transcript has word times (the path that skipped forced alignment)"


def test_null_pairing_abstains_unconfirmed(clips):
    audio, transcript = clips[AUDIO_SEED][2], clips[TEXT_SEED][3]
    energy = aligner.estimate_transcript_offset(audio, transcript, method="energy")
    assert not energy.abstained and energy.confidence >= 0.9, energy  # the defect: energy alone reads confident
    estimate = aligner.estimate_transcript_offset(audio, transcript, method="auto")
    assert estimate.abstained and estimate.method == "abstain:unconfirmed", estimate
    record = estimate.abstain_record()
    assert record["found"] and record["needed"] and record["hint"], record
    assert "forced alignment" in record["found"] and record["best_guess_ms"] == pytest.approx(energy.text_offset_ms)


def test_true_pairing_keeps_its_energy_answer(clips):
    _, record, audio, transcript = clips[TEXT_SEED]
    energy = aligner.estimate_transcript_offset(audio, transcript, method="energy")
    estimate = aligner.estimate_transcript_offset(audio, transcript, method="auto")
    assert not estimate.abstained and estimate == energy, estimate
    assert estimate.text_offset_ms == pytest.approx(record["text_offset_ms"], abs=RIGHT_MS)
