"""Word starts and transcript offsets on hand-timed real speech (``avalign._realmedia.fetch_hand_timed_speech``).

Two measurements, both against a phonetician's annotation:

- word starts: :func:`aligner.estimators.forced_align_words` on each recording's text over the whole recording,
  aligned start minus annotated start, per word, split into ``tune`` (praatio's files, used to measure
  ``aligner.estimators.FORCED_LEAD_MS``) and ``report`` (parselmouth's North Wind, never tuned on);
- transcript offsets: the recordings joined (16 kHz, 0.5 s pauses of -60 dBFS noise between), their annotated words
  written as a word-level transcript late by a known offset; ``estimate_transcript_offset`` must
  recover the offset (error = estimate - injected).
"""
from __future__ import annotations

import numpy as np
import torch

__all__ = ["hand_timed_offsets", "hand_timed_word_starts"]


def hand_timed_word_starts(cache_dir) -> dict:
    """``{"words": [{key, role, text, annotated_s, aligned_s, error_ms}], "summary": {role: {...}}}``."""
    import loaders
    from aligner.estimators import forced_align_words, shared_decoder
    from avalign._realmedia import fetch_hand_timed_speech

    rows = []
    for utterance in fetch_hand_timed_speech(cache_dir):
        audio = loaders.read_audio(str(utterance.wav_path))
        text = " ".join(w for w, _ in utterance.words)
        # The process's decoder: each recording is one whole utterance (batch CMN), so a new decoder per recording
        # gives the same words and only costs its build (~0.4 CPU-s).
        aligned = forced_align_words(audio, text, audio.start_seconds, audio.stop_seconds, decoder=shared_decoder())
        if [w.text.lower() for w in aligned] != [w.lower() for w, _ in utterance.words]:  # words keep their writing
            raise RuntimeError(f"{utterance.key}: aligned words {[w.text for w in aligned]} differ from the annotation")
        for w, (name, start) in zip(aligned, utterance.words):
            rows.append({"key": utterance.key, "role": utterance.role, "text": name, "annotated_s": round(start, 4),
                         "aligned_s": round(w.start_seconds, 4), "error_ms": (w.start_seconds - start) * 1000.0})
    summary = {}
    for role in ("tune", "report", "all"):
        e = np.array([r["error_ms"] for r in rows if role in ("all", r["role"])])
        summary[role] = {"n": int(e.size), "signed_median_ms": float(np.median(e)),
                         "abs_median_ms": float(np.median(np.abs(e))), "abs_p90_ms": float(np.percentile(np.abs(e), 90)),
                         "abs_max_ms": float(np.max(np.abs(e)))}
    return {"words": rows, "summary": summary}


def _joined(cache_dir, gap_seconds: float = 0.5):
    import loaders
    from avalign._realmedia import fetch_hand_timed_speech
    from avcore import AudioClip, Span, Transcript, Word

    rate, chunks, spans, t = 16000, [], [], 0.0
    # Pauses hold white noise at -60 dBFS, not exact zeros: a recording never has digital silence, and
    # forced alignment treats a span with exact zeros around it as synthetic (no lead correction; +22 ms).
    gap = (np.random.default_rng(0).standard_normal(int(gap_seconds * rate)) * 1e-3).astype(np.float32)
    for utterance in fetch_hand_timed_speech(cache_dir):
        audio = loaders.read_audio(str(utterance.wav_path), sample_rate=rate)
        samples = audio.samples.numpy()[0]
        duration = samples.size / rate
        starts = [s for _, s in utterance.words] + [duration]
        words = tuple(Word(w, t + a, t + max(b, a + 0.01)) for (w, _), a, b in zip(utterance.words, starts, starts[1:]))
        spans.append(Span(" ".join(w for w, _ in utterance.words), words[0].start_seconds, words[-1].stop_seconds, words))
        chunks += [samples, gap]
        t += duration + gap_seconds
    return AudioClip(torch.from_numpy(np.concatenate(chunks).astype(np.float32))[None], rate, 0.0), Transcript(tuple(spans))


def hand_timed_offsets(cache_dir, *, offsets_ms=(-150.0, 0.0, 80.0, 240.0), methods=("energy", "forced", "auto")) -> list[dict]:
    """One row per (injected offset, method): estimate, error and method used."""
    from aligner import estimate_transcript_offset

    audio, transcript = _joined(cache_dir)
    rows = []
    for injected in offsets_ms:
        late = transcript.shifted(injected / 1000.0)
        for method in methods:
            est = estimate_transcript_offset(audio, late, method=method)
            rows.append({"injected_ms": injected, "requested": method, "method": est.method,
                         "estimate_ms": est.text_offset_ms, "confidence": est.confidence,
                         "error_ms": None if est.abstained else est.text_offset_ms - injected,
                         "best_guess_error_ms": None if est.best_guess_ms is None else est.best_guess_ms - injected})
    return rows


if __name__ == "__main__":  # python -m avalign.bench._hand_timed CACHE_DIR
    import sys

    result = hand_timed_word_starts(sys.argv[1])
    for role, s in result["summary"].items():
        print(f"| {role} | {s['n']} | {s['signed_median_ms']:+.1f} | {s['abs_median_ms']:.1f} | {s['abs_p90_ms']:.1f} | {s['abs_max_ms']:.1f} |")
    for r in result["words"]:
        print(r["key"], r["role"], r["text"], f"{r['error_ms']:+.1f}")
    for r in hand_timed_offsets(sys.argv[1]):
        err = "abst." if r["error_ms"] is None else f"{r['error_ms']:+.1f}"
        print(f"| {r['injected_ms']:+.0f} | {r['requested']} | {r['method']} | {err} | {r['confidence']:.2f} |")
