"""``avalign preprocess`` and ``avalign report`` on a sample whose audio is its own member (``KEY.mp4`` without an
audio stream + ``KEY.wav``, as video2dataset writes ``KEY.mp4`` + ``KEY.m4a``): the loader yields that member's
audio, so both measure the A/V and transcript offsets against it, as they do for the same clip muxed.

Oracles: the generator's truth for ``sample_data/clip00`` (audio 120 ms late, WhisperX stamps 180 ms late) and
ffprobe's sample count of the WAV member.
"""
from __future__ import annotations

import io
import json
import subprocess
import tarfile

from avalign.preprocess import preprocess
from avalign.report import run_report
from tests.conftest import SAMPLE_DATA, ffmpeg

RATE = 16000


def _wav_samples(path) -> int:
    out = subprocess.check_output(["ffprobe", "-v", "error", "-select_streams", "a:0", "-count_packets",
                                   "-show_entries", "stream=duration_ts", "-of", "csv=p=0", str(path)], text=True)
    return int(out.strip())


def _truth() -> dict:
    return json.loads((SAMPLE_DATA / "truth.json").read_text())["clips"]["clip00"]


def _separate_audio_shard(tmp_path):
    """``(shard, wav)``: a tar of ``c.mp4`` (clip00's video stream only), ``c.wav`` (its audio, 16 kHz mono) and
    ``c.json`` (its WhisperX transcript)."""
    video, wav = tmp_path / "v.mp4", tmp_path / "a.wav"
    ffmpeg("-i", str(SAMPLE_DATA / "clip00.mp4"), "-an", "-c", "copy", str(video))
    ffmpeg("-i", str(SAMPLE_DATA / "clip00.mp4"), "-vn", "-ac", "1", "-ar", str(RATE), str(wav))
    shard = tmp_path / "in.tar"
    with tarfile.open(shard, "w") as tar:
        for name, data in (("c.mp4", video.read_bytes()), ("c.wav", wav.read_bytes()),
                           ("c.json", (SAMPLE_DATA / "clip00.json").read_bytes())):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return shard, wav


def test_video_only_mp4_with_wav_member_is_measured_against_the_wav(tmp_path):
    truth = _truth()
    shard, wav = _separate_audio_shard(tmp_path)
    out = tmp_path / "out"
    preprocess(str(shard), str(out), progress=False, timeout_seconds=None)
    with tarfile.open(out / "shard-000000.tar") as tar:
        record = json.loads(tar.extractfile("c.align.json").read())
        assert tar.extractfile("c.wav").read() == wav.read_bytes()  # still passed through for the loader
    assert record["audio"]["num_samples"] == _wav_samples(wav)
    assert record["audio"]["sample_rate"] == RATE
    assert abs(record["av_offset_ms"] - truth["av_offset_ms"]) <= 5.0
    assert abs(record["text_offset_ms"] - truth["text_offset_ms"]) <= 10.0
    first_word = record["words"][0]
    assert first_word["text"] == truth["words"][0]["text"]
    assert abs(first_word["start_seconds"] - truth["words"][0]["start_seconds"]) <= 0.010
    assert first_word["sample_start"] == round(first_word["start_seconds"] * RATE)
    row = json.loads((out / "manifest.jsonl").read_text().splitlines()[0])
    assert row["num_samples"] == round(truth["duration_seconds"] * RATE)


def test_report_measures_a_raw_shards_video_only_mp4_against_its_wav_member(tmp_path):
    truth = _truth()
    shard, _ = _separate_audio_shard(tmp_path)
    run_report(str(shard), out_dir=str(tmp_path / "report"), clip_pages=0, progress=False)
    (row,) = json.loads((tmp_path / "report" / "report.json").read_text())["clips"]
    assert abs(row["av_offset_ms"] - truth["av_offset_ms"]) <= 5.0
    assert abs(row["text_offset_ms"] - truth["text_offset_ms"]) <= 10.0
