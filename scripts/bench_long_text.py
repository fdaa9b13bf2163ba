"""Transcript offset on long media: memory and CPU of the energy estimator, and its answers on the wild sets
(BENCHMARKS.md, "Band energy blockwise"). ``PYTHONPATH`` chooses the checkout measured.

Usage::

    # long speech over a noise bed (espeak sentences, a 60 s pattern repeated), 16 kHz WAV + WhisperX JSON +120 ms
    PYTHONPATH=. python scripts/bench_long_text.py make DIR 300 1800 7200
    # one JSON line: CPU s and RSS of one step on DIR/longN.wav after decoding (its peak RSS, VmHWM reset before
    # the step, minus the RSS before it: added_mb; Linux only), in a fresh process
    #   bands: onset_offset_near (the band-SNR features of the whole clip); estimate: estimate_text_offset
    PYTHONPATH=. python scripts/bench_long_text.py measure estimate DIR/long1800.wav DIR/long1800.json
    # a wild set's text answers through align() (avalign.bench.wild_set) and, per clip, the energy estimator and
    # onset_offset_near at the truth ±60 ms; WORK holds wild-<name>
    PYTHONPATH=. python scripts/bench_long_text.py wild tune WORK OUT.json
    # two such files side by side
    python scripts/bench_long_text.py compare BEFORE.json AFTER.json
"""
from __future__ import annotations

import dataclasses
import json
import resource
import statistics
import sys
import time
from pathlib import Path

_PATTERN_SECONDS = 60.0
_OFFSET_SECONDS = 0.120
_RATE = 16000


def make(out: Path, durations: list[int]) -> None:
    import numpy as np
    import scipy.io.wavfile

    from avalign.synth import SENTENCES, StampedWord, render_transcript, synthesize_speech
    from avcore import resample

    rng = np.random.default_rng(37)
    pattern = np.zeros(int(_PATTERN_SECONDS * _RATE), dtype=np.float32)
    sentences, t, i = [], 0.5, 0
    while True:
        speech = synthesize_speech(SENTENCES[i % len(SENTENCES)])
        x = resample(speech.samples[None, :].astype(np.float32), speech.sample_rate, _RATE)[0]
        if t + x.size / _RATE > _PATTERN_SECONDS - 0.5:
            break
        a = int(round(t * _RATE))
        pattern[a : a + x.size] += x
        sentences.append([(w.text, t + w.start_seconds, t + w.stop_seconds) for w in speech.words])
        t += x.size / _RATE + rng.uniform(0.4, 1.5)
        i += 1
    speech_rms = float(np.sqrt(np.mean(pattern[pattern != 0] ** 2)))
    out.mkdir(parents=True, exist_ok=True)
    for seconds in durations:
        repeats = int(np.ceil(seconds / _PATTERN_SECONDS))
        x = np.tile(pattern, repeats)[: seconds * _RATE]
        noise = np.cumsum(rng.standard_normal(x.size).astype(np.float32))  # a random walk, high-passed: a rumbling bed
        noise -= np.convolve(noise, np.ones(64) / 64, "same")
        noise *= speech_rms * 10 ** (-12 / 20) / float(np.std(noise))  # 12 dB under the speech
        x = np.clip(x + noise.astype(np.float32), -1, 1)
        scipy.io.wavfile.write(out / f"long{seconds}.wav", _RATE, (x * 32767).astype(np.int16))
        stamped = [[StampedWord(w, k * _PATTERN_SECONDS + s + _OFFSET_SECONDS, k * _PATTERN_SECONDS + e + _OFFSET_SECONDS)
                    for w, s, e in sentence]
                   for k in range(repeats) for sentence in sentences if k * _PATTERN_SECONDS + sentence[-1][2] < seconds]
        (out / f"long{seconds}.json").write_text(render_transcript(stamped, transcript_format="whisperx",
                                                                   duration_seconds=seconds))
        print(f"{out / f'long{seconds}.wav'}: {len(stamped)} sentences")


def measure(mode: str, wav: str, transcript_path: str) -> None:
    import loaders
    from aligner.estimators import estimate_text_offset, onset_offset_near

    audio = loaders.read_audio(wav, name=wav)
    transcript = loaders.read_transcript(transcript_path)
    short = dataclasses.replace(audio, samples=audio.samples[:, : 10 * _RATE])
    onset_offset_near(short, transcript, 120.0, window_ms=60.0)  # imports, FFT plans
    audio_mb = audio.samples.numel() * 4 / 2**20
    Path("/proc/self/clear_refs").write_text("5")  # Linux: reset the peak RSS (VmHWM) to the current RSS
    rss_before = _status_mb("VmRSS")
    cpu = time.process_time()
    if mode == "bands":  # the band-SNR features of the whole clip, then the onset evidence near +120 ms
        result = onset_offset_near(audio, transcript, 120.0, window_ms=60.0)
    elif mode == "estimate":
        e = estimate_text_offset(audio, transcript)
        result = [e.text_offset_ms, e.confidence, e.method]
    else:
        raise SystemExit(f"mode must be bands or estimate, got {mode!r}")
    cpu = time.process_time() - cpu
    rss_peak = _status_mb("VmHWM")
    print(json.dumps({"mode": mode, "audio_seconds": audio.samples.shape[-1] / audio.sample_rate, "audio_mb": round(audio_mb),
                      "cpu_s": round(cpu, 2), "rss_before_mb": round(rss_before), "rss_peak_mb": round(rss_peak),
                      "added_mb": round(rss_peak - rss_before), "added_x_audio": round((rss_peak - rss_before) / audio_mb, 2),
                      "process_peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                      "result": result}))


def _status_mb(field: str) -> float:
    """``VmRSS`` / ``VmHWM`` of this process (MB), from /proc/self/status."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


def wild(name: str, work: Path, out: Path) -> None:
    import avalign.synth as synth
    import loaders
    from aligner.estimators import estimate_text_offset, onset_offset_near
    from avalign.bench import wild_records, wild_set

    seeds = {"tune": synth.TUNE_SEEDS, "heldout": synth.HELDOUT_SEEDS, "r35": synth.REPORT35_SEEDS,
             "final": synth.FINAL_SEEDS, "fresh": synth.FRESH_SEEDS}[name]
    cpu = time.process_time()
    result = wild_set(name, seeds, work, text=True, nulls=False, mouth_speech=False)
    cpu_wild = time.process_time() - cpu
    direct = {}
    cpu = time.process_time()
    for key, record in sorted(wild_records(seeds, work / f"wild-{name}").items()):
        media = str(work / f"wild-{name}" / record["media"])
        audio = loaders.read_audio(media, name=media)
        transcript = loaders.read_transcript(str(work / f"wild-{name}" / record["transcript"]))
        e = estimate_text_offset(audio, transcript)
        near = onset_offset_near(audio, transcript, float(record["text_offset_ms"]), window_ms=60.0)
        direct[key] = {"est": [e.text_offset_ms, e.confidence, e.method, e.peak_to_sidelobe, e.best_guess_ms],
                       "near": near, "truth": record["text_offset_ms"]}
    cpu_direct = time.process_time() - cpu
    out.write_text(json.dumps({"wild": result, "direct": direct, "cpu_wild": cpu_wild, "cpu_direct": cpu_direct},
                              default=str))
    print(json.dumps({k: result["summary"][k] for k in _SUMMARY}), f"CPU {cpu_wild:.1f} + {cpu_direct:.1f} s")


_SUMMARY = ("text_offset_error_ms_median", "text_offset_error_ms_max", "text_answered", "text_confident_wrong",
            "word_start_error_ms_median", "word_start_error_ms_p90")


def compare(before_path: Path, after_path: Path) -> None:
    before, after = (json.loads(Path(p).read_text()) for p in (before_path, after_path))
    for key in _SUMMARY:
        print(f"{key:30s} {before['wild']['summary'][key]!s:>22} {after['wild']['summary'][key]!s:>22}")
    rows_before = {r["key"]: r for r in before["wild"]["clips"]}
    rows_after = {r["key"]: r for r in after["wild"]["clips"]}
    moved = []
    for key, a in sorted(rows_before.items()):
        b = rows_after[key]
        if a.get("text_method") != b.get("text_method") or (a.get("text_offset_ms") is None) != (b.get("text_offset_ms") is None):
            moved.append(f"  {key} truth {a['true_text_offset_ms']}: {a.get('text_offset_ms')} {a.get('text_method')} -> "
                         f"{b.get('text_offset_ms')} {b.get('text_method')}")
        elif a.get("text_offset_ms") is not None and abs(a["text_offset_ms"] - b["text_offset_ms"]) > 1e-6:
            moved.append(f"  {key} truth {a['true_text_offset_ms']}: {a['text_offset_ms']:.2f} -> {b['text_offset_ms']:.2f} "
                         f"({a['text_method']})")
    print(f"align(): {len(moved)} of {len(rows_before)} text answers differ by more than 1e-6 ms or in method")
    print("\n".join(moved))
    for part in ("est", "bands", "near"):
        if any(part not in next(iter(d["direct"].values())) for d in (before, after)):
            continue
        pairs = [(before["direct"][k][part], after["direct"][k][part], before["direct"][k]["truth"]) for k in before["direct"]]
        if part == "near":
            pairs = [([a], [b], t) for a, b, t in pairs]
        answered = [sum(1 for a, b, _ in pairs if (a, b)[i][0] is not None) for i in (0, 1)]
        changed = sum(1 for a, b, _ in pairs if (a[0] is None) != (b[0] is None) or a[2:3] != b[2:3]
                      or (a[0] is not None and b[0] is not None and abs(a[0] - b[0]) > 1e-6))
        both = [(a[0], b[0], t) for a, b, t in pairs if a[0] is not None and b[0] is not None]
        errors = [(abs(a - t), abs(b - t)) for a, b, t in both]
        shift = max((abs(a - b) for a, b, _ in both), default=0.0)
        worse = sum(1 for e in errors if e[1] > e[0] + 1e-6)
        medians = [statistics.median(e[i] for e in errors) if errors else None for i in (0, 1)]
        print(f"direct {part}: answered {answered[0]} -> {answered[1]}; {changed} of {len(pairs)} changed answer or method "
              f"by more than 1e-6 ms; largest move {shift:.2f} ms; on the {len(errors)} answered both: |error| median "
              f"{medians[0] or 0:.2f} -> {medians[1] or 0:.2f} ms, larger after on {worse}")


def main(argv: list[str]) -> None:
    if len(argv) >= 3 and argv[0] == "make":
        make(Path(argv[1]), [int(a) for a in argv[2:]])
    elif len(argv) == 4 and argv[0] == "measure":
        measure(*argv[1:])
    elif len(argv) == 4 and argv[0] == "wild":
        wild(argv[1], Path(argv[2]), Path(argv[3]))
    elif len(argv) == 3 and argv[0] == "compare":
        compare(Path(argv[1]), Path(argv[2]))
    else:
        print(__doc__)
        raise SystemExit(2)


if __name__ == "__main__":
    main(sys.argv[1:])
