"""#13 item 3: forced alignment's memory is bounded whatever the transcript's word count.

Before: ~5 KB per word in pocketsphinx's alignment (20k words -> 0.83 GB, 300k -> 2.2 GB on a 2 s clip;
a 50 MB single-cue SRT reached 24 GB). Oracle: the peak RSS (``ru_maxrss``) of a child process, after the
inputs are built and the decoder is warm, versus after the alignment calls. The child is a fork of the test
process (``loaders.media.call_with_timeout``, the heap frozen around the fork): its peak starts at what it
inherited, and only what the alignment calls allocate can raise it.
"""
from __future__ import annotations

import pytest

pytest.importorskip("pocketsphinx")

PEAK_GROWTH_LIMIT_MB = 150.0


def _peak_growth_mb_and_results() -> dict:
    import resource

    import numpy as np
    import torch

    import aligner
    from aligner.estimators import caption_words, estimate_text_offset_forced, forced_align_words, shared_decoder
    from avcore import AudioClip, Span, Transcript, Word

    rate = 16000
    audio = AudioClip(torch.from_numpy(np.random.default_rng(0).standard_normal(2 * rate).astype(np.float32) * 0.1)[None],
                      rate, 0.0)
    huge_text = "the quick brown fox jumps over a lazy dog " * 35000  # 315k words, one cue (~1.5 MB)
    cue = Transcript((Span(huge_text[:-1], 0.0, 2.0),))
    many = Transcript(tuple(Span("word", i * 1e-4, i * 1e-4 + 1e-4, (Word("word", i * 1e-4, i * 1e-4 + 1e-4),))
                            for i in range(20000)))
    decoder = shared_decoder()
    forced_align_words(audio, "the quick brown fox", 0.0, 2.0, decoder=decoder)  # warm up the decoder
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    results = {
        "single_cue_words": len(forced_align_words(audio, huge_text, 0.0, 2.0, decoder=decoder)),
        "single_cue_offset": estimate_text_offset_forced(audio, cue, decoder=decoder).method,
        "many_words_offset": estimate_text_offset_forced(audio, many, decoder=decoder).method,
        "caption_failed": caption_words(audio, cue, decoder=decoder)[1],
        "align_failed": aligner.align(None, audio, cue, estimate=False).report.caption_words_failed,
    }
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"growth_mb": (after - before) / 1024.0, **results}


@pytest.mark.slow
def test_peak_memory_bounded_on_huge_transcripts():
    from loaders.media import call_with_timeout, heap_frozen_for_fork

    with heap_frozen_for_fork():  # the child never frees an inherited object (tests.conftest.start_forked)
        result = call_with_timeout(_peak_growth_mb_and_results, timeout_seconds=300, label="forced alignment memory")
    assert result["growth_mb"] <= PEAK_GROWTH_LIMIT_MB, result
    assert result["single_cue_words"] == 0  # refused: more words than MAX_ALIGN_WORDS
    assert result["single_cue_offset"].startswith("abstain:") and result["many_words_offset"].startswith("abstain:")
    assert result["caption_failed"] == 1 and result["align_failed"] == 1  # the caption is kept, without words


def test_refusal_reasons():
    from aligner.estimators import MAX_ALIGN_WORDS, alignment_refusal, normalise_words

    assert alignment_refusal(10, 3.0) is None
    assert alignment_refusal(MAX_ALIGN_WORDS + 1, 10_000.0) == "too_many_words"
    assert alignment_refusal(100, 700.0) == "too_long"
    assert alignment_refusal(50, 2.0) == "words_do_not_fit"
    assert len(normalise_words("a " * 100_000, limit=5)) == 6  # stops splitting past the limit
