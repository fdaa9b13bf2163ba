"""Estimator variants and building blocks: the advanced surface, stable but not part of DESIGN's contract.

Most users call :func:`aligner.align`, :func:`aligner.estimate_av_offset` or
:func:`aligner.estimate_transcript_offset`. This module is for tools that cache features or study one
estimator (the bench, the report, tests):

A/V offset and drift
    :func:`estimate_av_offset_from_arrays`, :func:`estimate_av_offset_from_features` (cached features),
    :func:`visual_change_events`, :func:`audio_onsets` / :class:`AudioOnsets`, :func:`audio_onset_envelope`,
    :func:`confidence_from_score`, :data:`NULL_THRESHOLD`; the estimator's steps, in order:
    :func:`detect_visual_events`, :func:`match_lag_drift` (audio events weighted by :func:`onset_weights`,
    tones raised by :func:`tonal_boost` of :func:`tonal_rise_db`), :func:`matched_pairs` (with each matched
    sound's :func:`onset_ranks`), :func:`fit_drift` (:func:`drift_line` weighted by :func:`dating_sigma_seconds`).
Transcript offset
    :func:`estimate_text_offset` (speech energy), :func:`estimate_text_offset_forced` (pocketsphinx),
    :data:`TEXT_METHODS` (the dispatcher's methods), :func:`estimate_transcript_offsets` (several methods at once,
    each estimator run once), :func:`refine_word_times`, :func:`onset_offset_near` (the
    onset evidence near another method's answer).
Forced alignment (optional extra ``[align]``)
    :func:`forced_align_words`, :func:`forced_align_scored` (with the words' acoustic fit), :func:`caption_words`,
    :func:`add_missing_pronunciations` (espeak-ng's pronunciations of words missing from the dictionary),
    :func:`in_dictionary` (a word of the dictionary itself), :func:`normalise_words` (dictionary forms), :func:`written_words` (the words as reported), :func:`spoken_tokens`,
    :func:`alignment_refusal`,
    :func:`new_decoder`, :func:`shared_decoder` and their constants.
Signals
    :func:`mono`, :func:`log_energy` (per-frame level), :func:`band_snr_levels` (each speech band over its own floor;
    block by block).
"""
from aligner._av_drift import MIN_PAIRS_FOR_DRIFT, OFFSET_PAIR_SECONDS, OFFSET_PERCENTILE, DriftFit, MatchedPairs, dating_sigma_seconds, drift_line, fit_drift, matched_pairs
from aligner._av_events import VisualEvents, detect_visual_events, onset_ranks, onset_weights
from aligner._av_match import MAX_SEARCH_EVENT_CELLS, SEARCH_EVENT_CELLS_PER_SECOND, LagDriftMatch, match_lag_drift
from aligner._av_records import confidence_from_score
from aligner._decoder import ALIGN_SAMPLE_RATE, new_decoder, shared_decoder
from aligner._estimate import estimate_av_offset_from_arrays, estimate_av_offset_from_features
from aligner._forced import (
    AFTER_PAUSE_LEAD_MS,
    CONNECTED_LEAD_MS,
    FIT_FLOOR_BELOW_DB,
    FORCED_LEAD_MS,
    MAX_ALIGN_SECONDS,
    MAX_ALIGN_WORDS,
    MAX_WORDS_PER_SECOND,
    PAD_SECONDS,
    STOP_LEAD_MS,
    add_missing_pronunciations,
    alignment_refusal,
    forced_align_scored,
    forced_align_words,
    in_dictionary,
    normalise_words,
    spoken_tokens,
    written_words,
)
from aligner._onsets import AudioOnsets, audio_onsets, tonal_boost, tonal_rise_db
from aligner._options import NULL_THRESHOLD, TEXT_METHODS, VISUAL_FEATURES, TextMethod
from aligner._signals import VisualFeature, audio_onset_envelope, log_energy, mono, visual_change_events
from aligner._text_method import estimate_transcript_offsets, heard_items
from aligner._text_forced import CAPTION_MARGIN_SECONDS, MIN_RETRY_FIT, MIN_WORD_FIT, caption_words, estimate_text_offset_forced
from aligner._text_offset import band_snr_levels, caption_edges, estimate_text_offset, onset_offset_near, refine_word_times

__all__ = [
    "AFTER_PAUSE_LEAD_MS", "ALIGN_SAMPLE_RATE", "AudioOnsets", "CAPTION_MARGIN_SECONDS", "CONNECTED_LEAD_MS",
    "DriftFit", "FIT_FLOOR_BELOW_DB", "FORCED_LEAD_MS", "LagDriftMatch", "MAX_ALIGN_SECONDS", "MAX_ALIGN_WORDS",
    "MAX_SEARCH_EVENT_CELLS", "MAX_WORDS_PER_SECOND", "MIN_PAIRS_FOR_DRIFT", "MIN_RETRY_FIT", "MIN_WORD_FIT",
    "MatchedPairs", "NULL_THRESHOLD", "OFFSET_PAIR_SECONDS", "OFFSET_PERCENTILE", "PAD_SECONDS",
    "SEARCH_EVENT_CELLS_PER_SECOND", "STOP_LEAD_MS", "TEXT_METHODS", "TextMethod", "VISUAL_FEATURES", "VisualEvents",
    "VisualFeature", "add_missing_pronunciations", "alignment_refusal", "audio_onset_envelope", "audio_onsets",
    "band_snr_levels", "caption_edges",
    "caption_words", "confidence_from_score", "dating_sigma_seconds", "detect_visual_events", "drift_line",
    "estimate_av_offset_from_arrays", "estimate_av_offset_from_features", "estimate_text_offset",
    "estimate_text_offset_forced", "estimate_transcript_offsets", "fit_drift", "forced_align_scored",
    "forced_align_words", "heard_items", "in_dictionary", "log_energy", "match_lag_drift", "matched_pairs", "mono", "new_decoder",
    "normalise_words", "onset_offset_near", "onset_ranks", "onset_weights", "refine_word_times", "shared_decoder",
    "spoken_tokens", "tonal_boost", "tonal_rise_db", "visual_change_events", "written_words",
]
