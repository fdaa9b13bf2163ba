"""The wild sets of ``avalign bench align``: tune and held-out clips of :mod:`avalign.synth._wild`, null pairings.

Per set (``wild_specs(TUNE_SEEDS)`` / ``wild_specs(HELDOUT_SEEDS)``), per clip::

    truth (generator)                      estimate
    av_offset_ms, drift_ppm           vs   estimate_av_offset (default options)
    A/V error   = |applied − true| at the clip's mid-time     (applied: drift None → 0; the number users feel)
    A/V error max over the clip [0, duration]                 (> 1 frame and answered: confident-wrong)
    dating bias = dated audio event − true sound start, per matched event, by attack shape
    text_offset_ms, word starts       vs   aligner.align(...) with the branch's transcript estimator (auto)

Null pairings: the video features of clip i with the audio events of clip j, every ordered pair i ≠ j
(552 per 24-clip set), and the video of clip i with the audio of clip j played backwards, every j (576); an answer
(significance ≥ the null threshold) on a null pairing is a false answer.
Mouth-speech clips (``avalign.synth.mouth_speech_specs`` of the set's seeds): texture + mouth + speech, no events,
their own audio: any answer is a false answer (an independent evaluator's ``n4``).
Mouth-only pairings: each clip with a speech-driven mouth, its own audio, its flashes and cuts removed from the
visual events (lip-like motion that truly correlates with the audio, no events): any answer is a false answer.

Estimation cost: visual events + audio events + matching on one core (torch and BLAS one thread),
scaled to seconds per 30 s of clip.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import logging
import time
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

logger = logging.getLogger(__name__)

__all__ = ["WildFeatures", "calibrate_null_threshold", "calibrate_tune_nulls", "clock_errors_ms", "format_wild_tables", "mouth_only_pairings",
           "mouth_speech_answers", "mouth_speech_records", "null_pairings", "reversed_onsets", "wild_features",
           "wild_records", "wild_set"]

SMOOTH_ATTACK_MS = 10.0
"""Events with a Hann, exponential or linear attack of at least this are "smooth" (bias target ≤ 3 ms)."""


@dataclasses.dataclass(frozen=True)
class WildFeatures:
    """What the A/V estimator needs from one clip, decoded once (null pairings reuse it)."""

    visual_events: np.ndarray
    """Per-frame ``background_rise``."""
    pts_seconds: np.ndarray
    """Real pts of every frame."""
    onsets: Any
    """``aligner.estimators.AudioOnsets`` of the clip's audio."""
    feature_seconds: float
    """Time spent computing both features (one core)."""


def wild_records(seeds: Sequence[int], clip_dir: Path) -> dict[str, dict]:
    """Generate each wild clip once (truth cached as ``<key>.truth.json`` beside the media, checked against the spec)."""
    from avalign.synth import make_wild_clip
    from avalign.synth import wild_specs
    from avalign.synth import spec_record

    clip_dir = Path(clip_dir)
    clip_dir.mkdir(parents=True, exist_ok=True)
    records = {}
    for number, spec in enumerate(wild_specs(seeds), start=1):
        cached = clip_dir / f"{spec.key}.truth.json"
        wanted = spec_record(spec)
        if cached.exists():
            record = json.loads(cached.read_text())
            if record.get("spec") == wanted and (clip_dir / record["media"]).exists():
                records[spec.key] = record
                continue
        started = time.perf_counter()
        record = make_wild_clip(spec, clip_dir)
        cached.write_text(json.dumps(record))
        records[spec.key] = record
        logger.info("[%d/%d] generated %s in %.1f s", number, len(seeds), spec.key, time.perf_counter() - started)
    return records


def _one_core():
    import contextlib

    import torch
    from threadpoolctl import threadpool_limits

    @contextlib.contextmanager
    def scope():
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            with threadpool_limits(1):
                yield
        finally:
            torch.set_num_threads(threads)

    return scope()


def wild_features(records: dict[str, dict], clip_dir: Path) -> dict[str, tuple[WildFeatures, Any, Any]]:
    """``{key: (features, video, audio)}``: decode each clip (frames at most ``ESTIMATION_MAX_WIDTH`` wide, as ``measure``) and compute its features."""
    import loaders
    from aligner.estimators import audio_onsets, visual_change_events
    from avalign._measure import read_video_for_estimation

    out = {}
    warm = False
    for key, record in sorted(records.items()):
        media = str(Path(clip_dir) / record["media"])
        video, _ = read_video_for_estimation(media, name=media)
        audio = loaders.read_audio(media, name=media)
        if not warm:  # the first call pays imports and allocator warm-up: not part of the per-clip cost
            visual_change_events(video.frames[:30])
            audio_onsets(audio.samples[:, : audio.sample_rate], audio.sample_rate)
            warm = True
        with _one_core():
            started = time.perf_counter()
            visual = visual_change_events(video.frames)
            onsets = audio_onsets(audio.samples, audio.sample_rate, start_seconds=audio.start_seconds)
            seconds = time.perf_counter() - started
        out[key] = (WildFeatures(visual, video.pts_seconds.numpy(), onsets, seconds), video, audio)
    return out


def clock_errors_ms(record: dict, offset_ms: Optional[float], drift_ppm: Optional[float]) -> tuple[float, float]:
    """(|error| at mid-clip, max |error| over the clip) of the applied clock (None → 0) against the truth (ms)."""
    t = np.linspace(0.0, record["duration_seconds"], 65)
    applied = (offset_ms or 0.0) + (drift_ppm or 0.0) * 1e-3 * t
    true = record["av_offset_ms"] + record["drift_ppm"] * 1e-3 * t
    error = np.abs(applied - true)
    return float(error[32]), float(error.max())


def _dating_errors(record: dict, onsets: Any) -> list[dict]:
    """Per true event: nearest dated audio event − true start (ms), when within 20 ms."""
    out = []
    for event in record["events"]:
        if onsets.times_seconds.size == 0:
            continue
        d = onsets.times_seconds - event["audio_seconds"]
        j = int(np.argmin(np.abs(d)))
        if abs(d[j]) <= 0.02:
            out.append({"attack": event["attack"], "attack_ms": event["attack_ms"], "sound": event["sound"],
                        "error_ms": 1000.0 * float(d[j])})
    return out


def _text_row(record: dict, clip_dir: Path, video: Any, audio: Any, estimate: Any) -> dict:
    """Transcript offset and word starts on the video timeline with the branch's estimators (``align``)."""
    import aligner
    import loaders

    transcript = loaders.read_transcript(str(Path(clip_dir) / record["transcript"]))
    given = dict(av_offset_ms=estimate.av_offset_ms, drift_ppm=estimate.drift_ppm) if not estimate.abstained else {}
    started = time.perf_counter()
    sample = aligner.align(video, audio, transcript, **given)
    seconds = time.perf_counter() - started
    r = sample.report
    row: dict[str, Any] = {"text_offset_ms": r.text_offset_ms, "text_method": r.text_method,
                           "text_confidence": r.text_confidence, "text_seconds": seconds,
                           "text_error_ms": None if r.text_offset_ms is None else abs(r.text_offset_ms - record["text_offset_ms"])}
    truth = record["words"]
    words = sample.words
    if words and len(words) == len(truth):
        row["word_error_ms"] = [1000.0 * abs(w.start_seconds - t["start_seconds"]) for w, t in zip(words, truth)]
    else:
        row["word_error_ms"] = []
        row["words_unmatched"] = f"{len(words)} aligned words for {len(truth)} true words"
    return row


def _clip_row(key: str, record: dict, features: WildFeatures, clip_dir: Path, video: Any, audio: Any, *,
              text: bool) -> dict:
    from aligner import AVOptions
    from aligner.estimators import estimate_av_offset_from_features

    with _one_core():
        started = time.perf_counter()
        est = estimate_av_offset_from_features(features.visual_events, features.pts_seconds, features.onsets)
        match_seconds = time.perf_counter() - started
    unthresholded = estimate_av_offset_from_features(features.visual_events, features.pts_seconds, features.onsets,
                                                     options=AVOptions(min_confidence=0.0))
    mid, worst = clock_errors_ms(record, est.av_offset_ms, est.drift_ppm)
    guess_mid, _ = clock_errors_ms(record, unthresholded.av_offset_ms, unthresholded.drift_ppm)
    seconds = features.feature_seconds + match_seconds
    frame_ms = 1000.0 / record["fps_nominal"]
    row = {
        "key": key, "container": record["container"], "codecs": f"{record['video_codec']}+{record['audio_codec']}",
        "fps": record["fps_nominal"], "vfr": record["vfr"], "duration_seconds": record["duration_seconds"],
        "num_true_events": record["num_events"], "talking_head": record["talking_head"], "bed": record["bed"],
        "snr_db": record["snr_db"], "camera": record["camera"], "reverb": record["reverb"],
        "speech_everywhere": bool((record.get("spec") or {}).get("speech_everywhere", False)),
        "reencode_kbps": record["reencode_kbps"], "transcript_format": record["transcript_format"],
        "true_av_offset_ms": record["av_offset_ms"], "true_drift_ppm": record["drift_ppm"],
        "true_text_offset_ms": record["text_offset_ms"],
        "av_offset_ms": est.av_offset_ms, "drift_ppm": est.drift_ppm, "av_method": est.method,
        "av_abstain": est.abstain.to_json() if est.abstain else None, "score": est.score,
        "num_events": est.num_events, "num_matched": est.num_matched,
        "answered": not est.abstained, "frame_ms": frame_ms,
        "av_error_ms": None if est.abstained else mid, "av_error_max_ms": None if est.abstained else worst,
        "unthresholded_error_ms": guess_mid if unthresholded.av_offset_ms is not None else None,
        "drift_error_ppm": None if est.drift_ppm is None else abs(est.drift_ppm - record["drift_ppm"]),
        "av_signed_error_ms": None if est.abstained else
        (est.av_offset_ms + (est.drift_ppm or 0.0) * 1e-3 * record["duration_seconds"] / 2)
        - (record["av_offset_ms"] + record["drift_ppm"] * 1e-3 * record["duration_seconds"] / 2),
        "confident_wrong": bool(not est.abstained and worst > frame_ms),
        "estimate_seconds": seconds, "estimate_seconds_per_30s": seconds * 30.0 / record["duration_seconds"],
        "dating": _dating_errors(record, features.onsets),
    }
    if text:
        row.update(_text_row(record, clip_dir, video, audio, est))
    return row


def reversed_onsets(onsets: Any) -> Any:
    """``onsets`` played backwards (event at ``t`` → ``duration − t``, each event keeping its strength, rise and
    tonality): an audio track with the clip's own event density and clustering that belongs to no video."""
    flip = (lambda x: None if x is None else np.ascontiguousarray(x[::-1]))
    return dataclasses.replace(onsets, times_seconds=onsets.duration_seconds - onsets.times_seconds[::-1],
                               strength=flip(onsets.strength), rise_seconds=flip(onsets.rise_seconds),
                               tonality_db=flip(onsets.tonality_db))


def null_pairings(features: dict[str, WildFeatures], *, reversed_audio: bool = False) -> list[dict]:
    """Every ordered pair (video of i, audio of j), i ≠ j: the estimate's score and whether it answered; with
    ``reversed_audio`` also every (video of i, audio of j played backwards, :func:`reversed_onsets`), j = i included."""
    from aligner.estimators import estimate_av_offset_from_features

    out = []
    keys = sorted(features)
    pairs = [(a, b, False) for a, b in itertools.permutations(keys, 2)]
    if reversed_audio:
        pairs += [(a, b, True) for a in keys for b in keys]
    for a, b, backwards in pairs:
        f, g = features[a], features[b]
        onsets = reversed_onsets(g.onsets) if backwards else g.onsets
        est = estimate_av_offset_from_features(f.visual_events, f.pts_seconds, onsets)
        out.append({"video": a, "audio": b, "reversed": backwards, "score": est.score, "answered": not est.abstained,
                    "method": est.method})
    return out


def mouth_speech_records(seeds: Sequence[int], clip_dir: Path) -> dict[str, dict]:
    """Generate each mouth-speech clip (``avalign.synth.mouth_speech_specs``: texture + mouth + speech, no events)
    once, cached like :func:`wild_records`."""
    from avalign.synth import make_wild_clip, mouth_speech_specs

    clip_dir = Path(clip_dir)
    clip_dir.mkdir(parents=True, exist_ok=True)
    records = {}
    for spec in mouth_speech_specs(seeds):
        cached = clip_dir / f"{spec.key}.truth.json"
        if cached.exists():
            record = json.loads(cached.read_text())
            if (clip_dir / record["media"]).exists():
                records[spec.key] = record
                continue
        record = make_wild_clip(spec, clip_dir)
        cached.write_text(json.dumps(record))
        records[spec.key] = record
    return records


def mouth_speech_answers(features: dict[str, WildFeatures], records: dict[str, dict]) -> list[dict]:
    """Each mouth-speech clip with its own audio: lip-like motion truly correlated with the speech and no event,
    so any answer is a false answer (its error against the truth says how wrong)."""
    from aligner.estimators import estimate_av_offset_from_features

    out = []
    for key in sorted(features):
        f, record = features[key], records[key]
        est = estimate_av_offset_from_features(f.visual_events, f.pts_seconds, f.onsets)
        error = None if est.abstained else clock_errors_ms(record, est.av_offset_ms, est.drift_ppm)[1]
        out.append({"clip": key, "score": est.score, "answered": not est.abstained, "error_max_ms": error,
                    "reason": est.abstain.reason if est.abstain else est.method})
    return out


def mouth_only_pairings(features: dict[str, WildFeatures], records: dict[str, dict]) -> list[dict]:
    """Each clip with a speech-driven mouth, its own audio, its flashes and cuts removed from the visual events
    (the flash frames, one before and two after, set to 0): a clip with lip-like motion and no events, whose
    mouth truly correlates with the audio (leading it by ``mouth_lead_ms``). Any answer is a false answer:
    lip-sync is not estimated."""
    from aligner.estimators import estimate_av_offset_from_features

    out = []
    for key in sorted(features):
        record, f = records[key], features[key]
        if not record.get("mouth"):
            continue
        visual = np.array(f.visual_events, dtype=np.float64)
        for event in record["events"]:
            frame = int(event["frame_index"])
            visual[max(0, frame - 1): frame + int(event["flash_frames"]) + 2] = 0.0
        for cut in record.get("cut_seconds", []):
            frame = int(np.searchsorted(f.pts_seconds, cut))
            visual[max(0, frame - 2): frame + 3] = 0.0
        est = estimate_av_offset_from_features(visual, f.pts_seconds, f.onsets)
        out.append({"clip": key, "score": est.score, "answered": not est.abstained, "method": est.method})
    return out


def calibrate_null_threshold(scores: Sequence[float], *, rate: float = 0.005, step: float = 0.1) -> dict:
    """The threshold rule of ``aligner.estimators.NULL_THRESHOLD``: the ``1 − rate`` quantile of null scores, rounded
    up to ``step``. ``rate`` is half the 1 % target: room for the sampling error of a rate measured on a few
    thousand pairings and for a held-out tail heavier than the tune set's."""
    values = np.asarray(scores, dtype=np.float64)
    if values.size == 0:
        raise ValueError("need at least one null score")
    quantile = float(np.percentile(values, 100.0 * (1.0 - rate)))
    return {"num_pairs": int(values.size), "quantile": quantile, "max": float(values.max()),
            "threshold": float(np.ceil(quantile / step - 1e-9) * step)}


def calibrate_tune_nulls(work_dir: Path) -> dict:
    """``NULL_THRESHOLD``'s derivation: :func:`calibrate_null_threshold` over the tune seeds' null pairings,
    other audio and reversed audio (:func:`null_pairings`), among the wild clips and the mouth-speech clips
    together (48 clips: 4,560 pairings), generated into ``work_dir`` when missing."""
    from avalign.synth import TUNE_SEEDS

    features = {}
    for folder, make in (("wild-tune", wild_records), ("mouthspeech-tune", mouth_speech_records)):
        clip_dir = Path(work_dir) / folder
        features.update({k: v[0] for k, v in wild_features(make(TUNE_SEEDS, clip_dir), clip_dir).items()})
    return calibrate_null_threshold([n["score"] for n in null_pairings(features, reversed_audio=True)])


def _median(values: list) -> Optional[float]:
    got = [v for v in values if v is not None]
    return float(np.median(got)) if got else None


def _summary(rows: list[dict], nulls: list[dict], mouths: Sequence[dict] = (), speaking: Sequence[dict] = ()) -> dict:
    eligible = [r for r in rows if r["num_true_events"] >= 3]
    answered = [r for r in eligible if r["answered"]]
    long = [r for r in rows if r["duration_seconds"] >= 30.0 and r["num_true_events"] >= 3]
    drift_errors = [r["drift_error_ppm"] for r in long if r["drift_error_ppm"] is not None]
    smooth = [d["error_ms"] for r in rows for d in r["dating"]
              if d["attack"] != "sharp" and d["attack_ms"] >= SMOOTH_ATTACK_MS]
    by_shape = {shape: _median([d["error_ms"] for r in rows for d in r["dating"] if d["attack"] == shape])
                for shape in ("sharp", "hann", "exponential", "linear")}
    words = [e for r in rows for e in r.get("word_error_ms", [])]
    text_errors = [r.get("text_error_ms") for r in rows if "text_method" in r]
    other = [n for n in nulls if not n.get("reversed")]
    backwards = [n for n in nulls if n.get("reversed")]
    return {
        "num_clips": len(rows),
        "num_clips_with_events": len(eligible),
        "answer_rate_with_events": len(answered) / len(eligible) if eligible else None,
        "av_error_ms_median": _median([r["av_error_ms"] for r in answered]),
        "av_error_ms_max": max((r["av_error_max_ms"] for r in answered), default=None),
        "av_signed_error_ms_median": _median([r["av_signed_error_ms"] for r in answered]),
        "unthresholded_error_ms_median": _median([r["unthresholded_error_ms"] for r in eligible]),
        "dating_bias_smooth_ms": _median(smooth),
        "num_smooth_events_dated": len(smooth),
        "dating_bias_by_attack_ms": by_shape,
        "confident_wrong": sum(r["confident_wrong"] for r in rows),
        "talking_heads_answered": sum(r["answered"] for r in rows if r["talking_head"]),
        "num_talking_heads": sum(r["talking_head"] for r in rows),
        "null_pairs": len(other),
        "null_answer_rate": sum(n["answered"] for n in other) / len(other) if other else None,
        "null_reversed_pairs": len(backwards),
        "null_reversed_answer_rate": sum(n["answered"] for n in backwards) / len(backwards) if backwards else None,
        "null_all_answer_rate": sum(n["answered"] for n in nulls) / len(nulls) if nulls else None,
        "null_score_p99": float(np.percentile([n["score"] for n in nulls], 99)) if nulls else None,
        "mouth_speech_clips": len(speaking),
        "mouth_speech_answered": sum(m["answered"] for m in speaking),
        "mouth_only_pairs": len(mouths),
        "mouth_only_answered": sum(m["answered"] for m in mouths),
        "drift_error_ppm_median": _median(drift_errors),
        "drift_report_rate_30s": len(drift_errors) / len(long) if long else None,
        "num_clips_30s": len(long),
        "estimate_seconds_per_30s_median": _median([r["estimate_seconds_per_30s"] for r in rows]),
        "estimate_seconds_per_30s_max": max((r["estimate_seconds_per_30s"] for r in rows), default=None),
        "text_offset_error_ms_median": _median(text_errors),
        "text_offset_error_ms_max": max((e for e in text_errors if e is not None), default=None),
        "text_answered": sum(e is not None for e in text_errors),
        "text_confident_wrong": sum(1 for e in text_errors if e is not None and e > 50.0),
        "word_start_error_ms_median": float(np.median(words)) if words else None,
        "word_start_error_ms_p90": float(np.percentile(words, 90)) if words else None,
        "num_words": len(words),
    }


def wild_set(name: str, seeds: Sequence[int], work_dir: Path, *, text: bool = True, nulls: bool = True,
             mouth_speech: bool = True) -> dict:
    """Generate (cached), estimate and summarise one wild set; ``{"name", "seeds", "clips", "nulls", "mouth_only",
    "mouth_speech", "summary"}``. ``nulls``: other-audio and reversed-audio pairings of the wild clips;
    ``mouth_speech``: the seeds' mouth-speech clips (``mouthspeech-<name>``) with their own audio."""
    clip_dir = Path(work_dir) / f"wild-{name}"
    records = wild_records(seeds, clip_dir)
    decoded = wild_features(records, clip_dir)
    rows = [_clip_row(k, records[k], decoded[k][0], clip_dir, decoded[k][1], decoded[k][2], text=text)
            for k in sorted(records)]
    pairs = null_pairings({k: v[0] for k, v in decoded.items()}, reversed_audio=True) if nulls else []
    mouths = mouth_only_pairings({k: v[0] for k, v in decoded.items()}, records)
    speaking = []
    if mouth_speech:
        speech_dir = Path(work_dir) / f"mouthspeech-{name}"
        speech_records = mouth_speech_records(seeds, speech_dir)
        speaking = mouth_speech_answers({k: v[0] for k, v in wild_features(speech_records, speech_dir).items()},
                                        speech_records)
    return {"name": name, "seeds": [min(seeds), max(seeds)], "clips": rows, "nulls": pairs, "mouth_only": mouths,
            "mouth_speech": speaking, "summary": _summary(rows, pairs, mouths, speaking)}


_TARGET_ROWS = (
    # (label, summary key, format, target text, check(value) -> bool | None)
    ("A/V answer rate, clips with >= 3 events", "answer_rate_with_events", ".0%", ">= 90 %", lambda v: v >= 0.9),
    ("A/V \\|error\\| median at mid-clip (ms), answered", "av_error_ms_median", ".2f", "<= 3", lambda v: v <= 3.0),
    ("A/V \\|error\\| max over each clip (ms), answered", "av_error_ms_max", ".1f", "< 1 frame", None),
    ("A/V signed error median (ms), answered", "av_signed_error_ms_median", "+.2f", "", None),
    ("A/V \\|error\\| median, unthresholded, clips with events (ms)", "unthresholded_error_ms_median", ".2f", "", None),
    ("event dating bias, smooth attacks >= 10 ms (ms, median signed)", "dating_bias_smooth_ms", "+.2f", "\\|x\\| <= 3",
     lambda v: abs(v) <= 3.0),
    ("null pairings answered (other clips' audio)", "null_answer_rate", ".2%", "<= 1 %", lambda v: v <= 0.01),
    ("null pairings answered (audio reversed)", "null_reversed_answer_rate", ".2%", "<= 1 %", lambda v: v <= 0.01),
    ("null pairings answered (both)", "null_all_answer_rate", ".2%", "<= 1 %", lambda v: v <= 0.01),
    ("null pairings: 99th percentile of the score (both)", "null_score_p99", ".2f", "", None),
    ("mouth-speech clips (no events) answered", "mouth_speech_answered", "d", "0", lambda v: v == 0),
    ("mouth-speech clips", "mouth_speech_clips", "d", "", None),
    ("confident-wrong clips (answered, > 1 frame anywhere)", "confident_wrong", "d", "0", lambda v: v == 0),
    ("talking heads answered", "talking_heads_answered", "d", "0", lambda v: v == 0),
    ("mouth clips with flashes removed, own audio, answered", "mouth_only_answered", "d", "0", lambda v: v == 0),
    ("mouth clips with flashes removed (pairings)", "mouth_only_pairs", "d", "", None),
    ("drift \\|error\\| median where reported, clips >= 30 s (ppm)", "drift_error_ppm_median", ".1f", "<= 50",
     lambda v: v <= 50.0),
    ("drift report rate, clips >= 30 s with events", "drift_report_rate_30s", ".0%", ">= 80 %", lambda v: v >= 0.8),
    ("A/V estimation s per 30 s of clip, one core (median)", "estimate_seconds_per_30s_median", ".2f", "<= 1",
     lambda v: v <= 1.0),
    ("A/V estimation s per 30 s of clip, one core (max)", "estimate_seconds_per_30s_max", ".2f", "", None),
    ("transcript offset \\|error\\| median (ms)", "text_offset_error_ms_median", ".1f", "<= 10", lambda v: v <= 10.0),
    ("transcript offset \\|error\\| max (ms)", "text_offset_error_ms_max", ".1f", "<= 25", lambda v: v <= 25.0),
    ("transcript offset answered (clips)", "text_answered", "d", "", None),
    ("transcript offset confident-wrong (> 50 ms)", "text_confident_wrong", "d", "0", lambda v: v == 0),
    ("word start error median, video timeline (ms)", "word_start_error_ms_median", ".1f", "<= 15", lambda v: v <= 15.0),
    ("word start error p90, video timeline (ms)", "word_start_error_ms_p90", ".1f", "<= 30", lambda v: v <= 30.0),
)


def _cell(summary: dict, key: str, spec: str, check) -> str:
    value = summary.get(key)
    if value is None:
        return "-"
    text = format(value, spec)
    if check is not None:
        text += "" if check(value) else " (NOT met)"
    return text


def format_wild_tables(sets: Sequence[dict]) -> str:
    """Markdown: the sets side by side against the targets, then one row per clip of each set."""
    names = " | ".join(f"{s['name']} (seeds {s['seeds'][0]}-{s['seeds'][1]})" for s in sets)
    lines = [
        "### Wild sets (avalign.synth._wild): tune vs held-out", "",
        "Held-out figures are the ones the targets are judged on; nothing was tuned on them.", "",
        f"| quantity | {names} | target |", "|---|" + "---:|" * len(sets) + "---|",
    ]
    lines.append("| clips (with >= 3 events; >= 30 s) | " + " | ".join(
        f"{s['summary']['num_clips']} ({s['summary']['num_clips_with_events']}; {s['summary']['num_clips_30s']})"
        for s in sets) + " | |")
    for label, key, spec, target, check in _TARGET_ROWS:
        lines.append(f"| {label} | " + " | ".join(_cell(s["summary"], key, spec, check) for s in sets) + f" | {target} |")
    lines.append("| dating median by attack: sharp / Hann / exponential / linear (ms) | " + " | ".join(
        " / ".join("-" if v is None else f"{v:+.1f}" for v in s["summary"]["dating_bias_by_attack_ms"].values())
        for s in sets) + " | |")
    lines.append("| null pairings (ordered pairs: other audio + reversed audio) | " + " | ".join(
        f"{s['summary']['null_pairs']} + {s['summary'].get('null_reversed_pairs', 0)}" for s in sets) + " | |")
    for s in sets:
        lines += ["", f"#### {s['name']}: per clip", "",
                  "| key | s | fmt | fps | bed | SNR dB | camera | rev | mp3 | events (seen) | A/V est | true | "
                  "\\|err\\| mid / max ms | drift est | true | score | method / abstain | text est | true | s/30 s |",
                  "|---|---:|---|---:|---|---:|---|---:|---:|---|---:|---:|---|---:|---:|---:|---|---:|---:|---:|"]
        for r in s["clips"]:
            est = "-" if r["av_offset_ms"] is None else f"{r['av_offset_ms']:.1f}"
            err = "-" if r["av_error_ms"] is None else f"{r['av_error_ms']:.1f} / {r['av_error_max_ms']:.1f}"
            drift = "-" if r["drift_ppm"] is None else f"{r['drift_ppm']:.0f}"
            how = r["av_method"] if r["av_abstain"] is None else f"{r['av_abstain']['reason']}: {r['av_abstain']['found']}"
            text = "-" if r.get("text_offset_ms") is None else f"{r['text_offset_ms']:.1f}"
            lines.append(
                f"| {r['key']} | {r['duration_seconds']:.0f} | {r['container']} {r['codecs']} | {r['fps']:.2f}"
                f"{' vfr' if r['vfr'] else ''} | {r['bed']}{' (over events)' if r.get('speech_everywhere') else ''} | {r['snr_db']:.0f} | {r['camera']} | {r['reverb']:.0f} | "
                f"{r['reencode_kbps']} | {r['num_true_events']} ({r['num_events']}) | {est} | {r['true_av_offset_ms']:.1f} | "
                f"{err} | {drift} | {r['true_drift_ppm']:.0f} | {r['score']:.2f} | {how} | {text} | "
                f"{r['true_text_offset_ms'] if 'true_text_offset_ms' in r else '-'} | {r['estimate_seconds_per_30s']:.2f} |")
    return "\n".join(lines)
