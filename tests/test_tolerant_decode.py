"""Tolerant decoding: a packet the decoder rejects is skipped and counted (``decode_errors``), as ``ffmpeg -i`` does;
the timeline stays exact (audio: the packet's time is silence; video: the frames after it keep their own pts).

Inputs are generated: a clean MKV from ffmpeg's test sources, then the same packets remuxed with PyAV where one
packet's payload is replaced by zeros (no sync word / start code). Oracles: the clean decode for audio, ffprobe's
``best_effort_timestamp_time`` of the corrupted file for video.
"""
from __future__ import annotations

import io
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch

from loaders import make_loader, read_audio, read_video
from tests.conftest import ffmpeg, ffprobe_frame_times

AC3_FRAME = 1536
"""Samples per AC-3 frame (one packet)."""


def zero_one_packet(src: Path, dst: Path, *, kind: str, number: int) -> None:
    """Copies ``src`` to ``dst`` (same codecs, same timestamps) with packet ``number`` (1-based) of the first
    ``kind`` (``audio`` / ``video``) stream replaced by zero bytes of the same size."""
    import av

    with av.open(str(src)) as source, av.open(str(dst), "w") as out:
        mapping = {s.index: out.add_stream_from_template(s) for s in source.streams if s.type in ("audio", "video")}
        target = getattr(source.streams, kind)[0]
        seen = 0
        for packet in source.demux():
            if packet.dts is None or packet.stream.index not in mapping:
                continue
            index = packet.stream.index
            if packet.stream is target:
                seen += 1
                if seen == number:
                    bad = av.Packet(bytes(packet.size))
                    bad.pts, bad.dts, bad.time_base, bad.duration = packet.pts, packet.dts, packet.time_base, packet.duration
                    packet = bad
            packet.stream = mapping[index]
            out.mux(packet)


@pytest.fixture(scope="module")
def media(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("tolerant")
    clean = d / "clean.mkv"
    ffmpeg("-f", "lavfi", "-i", "testsrc=size=32x24:rate=10", "-f", "lavfi", "-i", "sine=f=440:r=48000", "-t", "2",
           "-c:v", "mpeg4", "-g", "5", "-c:a", "ac3", "-ac", "1", str(clean))
    bad_audio, bad_video = d / "bad_audio.mkv", d / "bad_video.mkv"
    zero_one_packet(clean, bad_audio, kind="audio", number=3)
    zero_one_packet(clean, bad_video, kind="video", number=8)
    return {"clean": clean, "bad_audio": bad_audio, "bad_video": bad_video}


def test_bad_audio_packet_is_silence_and_counted(media):
    clean, bad = read_audio(media["clean"]), read_audio(media["bad_audio"])
    assert clean.decode_errors == 0 and bad.decode_errors == 1
    assert bad.num_samples == clean.num_samples and bad.start_seconds == clean.start_seconds  # timeline kept
    lo, hi = 2 * AC3_FRAME, 3 * AC3_FRAME  # the third packet's samples
    assert torch.equal(bad.samples[:, :lo], clean.samples[:, :lo])  # before it: the same decode
    assert float(bad.samples[:, lo:hi].abs().max()) == 0.0  # its time: silence
    assert float(clean.samples[:, lo:hi].abs().max()) > 0.1
    # after it the AC-3 overlap settles within one frame: the tone is back in step
    after = (bad.samples[:, hi + AC3_FRAME:] - clean.samples[:, hi + AC3_FRAME:]).abs().max()
    assert float(after) < 1e-3


def test_bad_video_packet_is_skipped_and_pts_kept(media):
    clip = read_video(media["bad_video"])
    expected = ffprobe_frame_times(media["bad_video"])  # what ffmpeg decodes from the same file
    assert clip.metadata.decode_errors >= 1 and read_video(media["clean"]).metadata.decode_errors == 0
    assert clip.num_frames == len(expected) < 20
    np.testing.assert_allclose(clip.pts_seconds.numpy(), expected, atol=1e-9)


def test_loader_counts_decode_errors(media, tmp_path):
    shard = tmp_path / "shard-000000.tar"
    with tarfile.open(shard, "w") as tar:
        for key, path in (("a", media["bad_audio"]), ("v", media["bad_video"]), ("c", media["clean"])):
            data = path.read_bytes()
            info = tarfile.TarInfo(f"{key}.mkv")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    loader = make_loader(str(shard), seed=0, frame_size=(24, 32), budgets=(64, 100_000, 16))
    keys = sorted(k for batch in loader for k in batch.sample_keys)
    video_errors = read_video(media["bad_video"]).metadata.decode_errors
    assert keys == ["a", "c", "v"] and loader.stats.skipped == {}
    assert loader.stats.decode_errors == 1 + video_errors
