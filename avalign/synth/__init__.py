"""Synthetic media with exact ground truth (``sample_data/`` and benchmark sets).

Speech with known word times from espeak-ng, white flash frames and tone beeps placed under the
clock model of DESIGN.md, encoded with FFmpeg into the containers users have (``make_clip``); and the
independent "wild" generator with real-footage nuisances and tune / held-out seed ranges
(``make_wild_clip``, ``wild_specs``, issue #12).
"""
from ._clip import BEEP_FREQUENCY_HZ, BEEP_SECONDS, make_clip
from ._dataset import write_dataset, write_shards
from ._espeak import ESPEAK_SAMPLE_RATE, Speech, SpokenWord, synthesize_speech, word_onset_energy_ratios
from ._spec import SENTENCES, ClipSpec, random_specs, sample_specs
from ._transcript_writers import StampedWord, render_transcript
from ._wild import attack_envelope, make_wild_clip
from ._wild_spec import FINAL_SEEDS, FRESH_SEEDS, HELDOUT_SEEDS, REPORT11_SEEDS, REPORT13_SEEDS, REPORT17_SEEDS, REPORT19_SEEDS, REPORT21_SEEDS, REPORT23_SEEDS, REPORT25_SEEDS, REPORT27_SEEDS, REPORT29_SEEDS, REPORT31_SEEDS, REPORT33_SEEDS, REPORT35_SEEDS, REPORT36_SEEDS, REPORT37_SEEDS, REPORT38_SEEDS, REPORT39_SEEDS, REPORT40_SEEDS, REPORT42_SEEDS, REPORT43_SEEDS, REPORT47_SEEDS, REPORT49_SEEDS, REPORT53_SEEDS, REPORT55_SEEDS, REPORT57_SEEDS, REPORT59_SEEDS, REPORT61_SEEDS, REPORT63_SEEDS, SUBFRAME_FROM_SEED, TUNE2_SEEDS, TUNE43_SEEDS, TUNE51_SEEDS, TUNE_SEEDS, WildEvent, WildSpec, mouth_speech_specs, spec_record, wild_specs

__all__ = [
    "BEEP_FREQUENCY_HZ",
    "BEEP_SECONDS",
    "ClipSpec",
    "ESPEAK_SAMPLE_RATE",
    "FINAL_SEEDS",
    "FRESH_SEEDS",
    "HELDOUT_SEEDS",
    "REPORT11_SEEDS",
    "REPORT13_SEEDS",
    "REPORT17_SEEDS",
    "REPORT19_SEEDS",
    "REPORT21_SEEDS",
    "REPORT23_SEEDS",
    "REPORT25_SEEDS",
    "REPORT27_SEEDS",
    "REPORT29_SEEDS",
    "REPORT31_SEEDS",
    "REPORT33_SEEDS",
    "REPORT35_SEEDS",
    "REPORT36_SEEDS",
    "REPORT37_SEEDS",
    "REPORT38_SEEDS",
    "REPORT39_SEEDS",
    "REPORT40_SEEDS",
    "REPORT42_SEEDS",
    "REPORT43_SEEDS",
    "REPORT47_SEEDS",
    "REPORT49_SEEDS",
    "REPORT53_SEEDS",
    "REPORT55_SEEDS",
    "REPORT57_SEEDS",
    "REPORT59_SEEDS",
    "REPORT61_SEEDS",
    "REPORT63_SEEDS",
    "SUBFRAME_FROM_SEED",
    "SENTENCES",
    "Speech",
    "SpokenWord",
    "StampedWord",
    "TUNE2_SEEDS",
    "TUNE43_SEEDS",
    "TUNE51_SEEDS",
    "TUNE_SEEDS",
    "WildEvent",
    "WildSpec",
    "attack_envelope",
    "make_clip",
    "make_wild_clip",
    "mouth_speech_specs",
    "random_specs",
    "render_transcript",
    "sample_specs",
    "synthesize_speech",
    "spec_record",
    "wild_specs",
    "word_onset_energy_ratios",
    "write_dataset",
    "write_shards",
]
