"""The small uneven shard set of the loader tests (``tests/test_loader.py``) and the torchrun job
(``tests/test_torchrun.py``): 3 shards, so 2 ranks get 2 and 1 of them."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tests.conftest import tiny_clip
from tests.corrupt_cases import write_tar

FPS = 10
SAMPLE_RATE = 16000
BUDGETS = (20, 32000, 16)
WINDOW_SECONDS = 0.5


def transcript_json(words: list[tuple[str, float, float]]) -> bytes:
    """A WhisperX-style JSON document with one segment holding ``words`` as ``(text, start, end)``."""
    segment = {"start": words[0][1], "end": words[-1][2], "text": " ".join(w for w, _, _ in words),
               "words": [{"word": w, "start": s, "end": e} for w, s, e in words]}
    return json.dumps({"segments": [segment]}).encode()


def write_loader_shards(d: Path, *, window_seconds: float = WINDOW_SECONDS) -> dict:
    """3 shards in ``d``: 7 good clips (1.0 / 1.3 / 0.7 s at 10 fps, AAC 16 kHz), one corrupt mp4, one bad
    transcript, one sample without video. Returns the shard paths and the expected windows per key."""
    media = {}
    for seconds in (1.0, 1.3, 0.7):
        out = d / f"clip{seconds}.mp4"
        media[seconds] = tiny_clip(out, seconds, fps=FPS, sample_rate=SAMPLE_RATE)
    words = transcript_json([("one", 0.1, 0.3), ("two", 0.4, 0.65), ("three", 0.7, 0.9)])
    align_json = json.dumps({"av_offset_ms": 0.0, "drift_ppm": 0.0, "text_offset_ms": 0.0}).encode()
    layout = [
        [("k00", 1.0, words, True), ("k01", 1.3, words, False), ("bad_mp4", None, words, False)],
        [("k10", 0.7, words, False), ("k11", 1.0, None, True), ("bad_txt", 1.0, b"{not json", False)],
        [("k20", 1.3, words, False), ("no_video", "none", words, False), ("k21", 0.7, words, False)],
    ]
    paths, expected = [], {}
    for index, samples in enumerate(layout):
        members = []
        for key, seconds, transcript, with_align in samples:
            if seconds is None:
                members.append((f"{key}.mp4", b"\x00\x00\x00\x18ftypmp42 this is not a video"))
            elif seconds != "none":
                members.append((f"{key}.mp4", media[seconds]))
                if not key.startswith("bad"):
                    expected[key] = int(np.ceil(seconds / window_seconds - 1e-9))
            if transcript is not None:
                members.append((f"{key}.json", transcript))
            if with_align:
                members.append((f"{key}.align.json", align_json))
        path = d / f"shard-{index:06d}.tar"
        write_tar(path, members)
        paths.append(str(path))
    return {"paths": paths, "expected": expected}
