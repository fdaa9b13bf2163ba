"""A fresh-eyes user's defects (round 35): each test runs what the user ran and checks the output against an oracle
(the bytes the test damaged, the files it wrote, ffprobe, ``loaders.errors.REASONS``)."""
from __future__ import annotations

import random
import subprocess
import sys
import textwrap

from tests.conftest import encode_once

# ---------------------------------------------------------------- 1. decord's own FFmpeg log lines on stderr


def _damaged_clip(path) -> None:
    """A 2 s H.264 MP4 whose bytes from 30 % of the file on are 2,000 seeded random bytes: the container (and its
    ``moov`` at the end) is intact, the packets there are garbage, so every decoder complains about them."""
    data = bytearray(encode_once(path, "-f", "lavfi", "-i", "testsrc=size=64x48:rate=30", "-t", "2", "-c:v", "libx264",
                                 "-threads", "1", "-g", "15"))
    rng = random.Random(35)
    at = int(len(data) * 0.3)
    data[at:at + 2000] = bytes(rng.randrange(256) for _ in range(2000))
    path.write_bytes(bytes(data))


def test_decord_reads_of_a_damaged_file_print_no_ffmpeg_log_lines(tmp_path):
    """Before: decord links its own FFmpeg, whose default log callback printed "[h264 @ 0x...] Invalid NAL unit
    size ..." straight to the user's stderr (PyAV and torchcodec keep FFmpeg quiet). The read must still fail with a
    DecodeError naming the file, both as ``backend="decord"`` and as ``auto``'s decord fallback (forced here by making
    torchcodec, which refuses these packets, the first choice)."""
    path = tmp_path / "damaged.mp4"
    _damaged_clip(path)
    script = textwrap.dedent(f"""
        import loaders
        from loaders.media import AUTO_BACKEND
        AUTO_BACKEND["full"] = "torchcodec"
        for backend in ("decord", "auto"):
            try:
                loaders.read_video({str(path)!r}, backend=backend)
                print(backend, "decoded")
            except loaders.DecodeError as e:
                print(backend, "DecodeError", e)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert [line.split(" ", 2)[:2] for line in lines] == [["decord", "DecodeError"], ["auto", "DecodeError"]], proc.stdout
    assert all(str(path) in line for line in lines), proc.stdout
    assert "decord decode failed: Check failed" in lines[0]  # decord's message, without dmlc's "[hh:mm:ss] src/..:N:"
    assert "/github/workspace" not in lines[0]
    assert [line for line in proc.stderr.splitlines() if line.startswith("[")] == [], proc.stderr
