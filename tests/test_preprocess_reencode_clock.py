"""``preprocess --reencode mp4`` keeps the source's clock (avalign.preprocess.reencode_mp4).

Oracles: ffprobe's per-frame times of the source vs the output (every frame within half a tick of the source's
time base); the first audio sample's time and the sample count of the source vs the output as the loader decodes
them (both audio backends), and the content lag of the two decodes (FFT cross-correlation on their own
timelines: 0 samples = the same clock); a transcript word's frame; ``avalign measure``'s A/V offset of a clip
generated with known truth (sample_data, ``avalign.synth``). Sources are generated here: 64x48, 2 s.

Before (main at 2ae936f): start times dropped (5 s, 1.4 s, 100000 s → 0), VFR frames duplicated (60 → 89),
re-encoded audio starting 21-23 ms early, clip01's offset -82.5 → -68.8 ms.
"""
from __future__ import annotations

import io
import json
import logging
import subprocess
import tarfile
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import loaders
from conftest import REPO, ffmpeg, ffprobe_frame_times, sample_truth

VIDEO = ("-f", "lavfi", "-i", "testsrc=size=64x48:rate=30")


def _noise(rate: int) -> tuple[str, ...]:
    return ("-f", "lavfi", "-i", f"anoisesrc=r={rate}:a=0.3:seed=7")


VFR = ("-vf", "select='lt(n,30)+eq(mod(n,2),0)',setpts='if(lt(N,30),N/30,(30+2*(N-30))/30)/TB'", "-fps_mode", "vfr")
AAC = ("-c:a", "aac", "-aac_coder", "fast")  # a third of the default coder's time; the sources' clocks are the same
SOURCES = {
    # name: ffmpeg arguments (inputs and output options; 2 s)
    "start5.mp4": (*VIDEO, *_noise(48000), "-c:v", "libx264", *AAC, "-output_ts_offset", "5"),
    "start.ts": (*VIDEO, *_noise(48000), "-c:v", "libx264", *AAC),  # MPEG-TS: starts at 1.4 s
    "start1e5.mkv": (*VIDEO, *_noise(44100), "-c:v", "libx264", *AAC, "-output_ts_offset", "100000"),
    "vfr.mp4": (*VIDEO, *_noise(48000), *VFR, "-c:v", "libx264", *AAC),
    "ntsc.mp4": ("-f", "lavfi", "-i", "testsrc=size=64x48:rate=30000/1001", *_noise(48000), "-c:v", "libx264",
                 "-bf", "2", *AAC),
    "opus_at_0.3.mkv": (*VIDEO, "-itsoffset", "0.3", *_noise(48000), "-c:v", "libx264", "-c:a", "libopus"),
    "opus_at_1e5.mkv": (*VIDEO, *_noise(48000), "-c:v", "libx264", "-c:a", "libopus", "-output_ts_offset", "100000"),
    "pcm16k_at_0.01.mov": (*VIDEO, "-itsoffset", "0.01", *_noise(16000), "-c:v", "libx264", "-c:a", "pcm_s16le"),
    "ac3.mkv": (*VIDEO, *_noise(48000), "-c:v", "libx264", "-c:a", "ac3"),
    "audio.mp3": (*_noise(48000), "-c:a", "libmp3lame"),
    "audio.wav": (*_noise(16000),),
    "video.mp4": (*VIDEO, "-c:v", "libx264"),
    "pcm_at_-0.05.mkv": (*VIDEO, "-itsoffset", "-0.05", *_noise(48000), "-c:v", "libx264", "-c:a", "pcm_s16le",
                         "-avoid_negative_ts", "disabled"),
}


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("reencode-sources")
    for name, args in SOURCES.items():
        ffmpeg(*args, "-t", "2", str(d / name))
    return d


@pytest.fixture(scope="module")
def reencoded(sources, tmp_path_factory):
    """name → (output path, Reencoded), made once per source."""
    from avalign.preprocess import reencode_mp4

    out_dir = tmp_path_factory.mktemp("reencode-out")
    done = {}

    def get(name: str, folder: Path = sources):
        if name not in done:
            result = reencode_mp4((folder / name).read_bytes(), label=name, timeout_seconds=120)
            path = out_dir / f"{name}.mp4"
            path.write_bytes(result.data)
            done[name] = (path, result)
        return done[name]

    return get


def _time_base(path: Path) -> Fraction:
    out = subprocess.check_output(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                                   "stream=time_base", "-of", "csv=p=0", str(path)], text=True)
    return Fraction(out.split()[0])


def _content_lag_samples(src, out) -> int:
    """Samples by which ``out``'s audio content is presented later than ``src``'s (same rate): 0 = same clock."""
    rate = src.sample_rate
    x, y = src.samples[0].double().numpy(), out.samples[0].double().numpy()
    offset = round((out.start_seconds - src.start_seconds) * rate)
    n = 1 << (len(x) + len(y)).bit_length()
    corr = np.fft.irfft(np.fft.rfft(x, n).conj() * np.fft.rfft(y, n), n)
    k = int(np.argmax(corr))
    return (k if k < n // 2 else k - n) + offset


# ------------------------------------------------------------------------------------------------ frame times


@pytest.mark.parametrize("name", ["start5.mp4", "start.ts", "start1e5.mkv", "vfr.mp4", "ntsc.mp4", "video.mp4",
                                  "opus_at_0.3.mkv", "opus_at_1e5.mkv", "pcm16k_at_0.01.mov"])
def test_every_frame_keeps_its_presentation_time(sources, reencoded, name):
    # Before: 5 s / 1.4 s / 100000 s starts became 0 (and one frame was duplicated); the VFR clip's 60 frames
    # became 89 (MP4's default constant frame rate duplicated the 15 fps part); the TS's first frame moved 0.67 ms
    # when kept with -copyts (the 1 ms movie timescale).
    out, result = reencoded(name)
    expected = ffprobe_frame_times(sources / name)
    got = ffprobe_frame_times(out)
    half_tick = float(_time_base(sources / name)) / 2
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=0, atol=half_tick)
    decoded = loaders.read_video(str(out))  # what the loaders give
    np.testing.assert_allclose(decoded.pts_seconds.numpy(), expected, rtol=0, atol=half_tick)
    # ... and every frame decodes to the source's picture within the encoder's error (CRF 23 on testsrc at 64x48:
    # at most 10 of 255 a pixel on average; chunk offsets wrong after an edit-list rewrite would decode garbage)
    source_frames = loaders.read_video(str(sources / name)).frames.float()
    error = (decoded.frames.float() - source_frames).abs().mean(dim=(1, 2, 3))
    assert float(error.max()) < 16.0
    assert result.video_start_delta_ms == pytest.approx(0.0, abs=half_tick * 1000)


def test_an_avi_with_b_frames_keeps_its_frame_times(media_dir, reencoded):
    # MPEG-4 Part 2 with B-frames in AVI (the last frame has no timestamp in ffprobe) + MP3 at 16 kHz.
    out, result = reencoded("bframes.avi", media_dir)
    expected, got = ffprobe_frame_times(media_dir / "bframes.avi"), ffprobe_frame_times(out)
    assert got.shape == expected.shape
    known = ~np.isnan(expected)
    np.testing.assert_allclose(got[known], expected[known], rtol=0, atol=float(_time_base(media_dir / "bframes.avi")) / 2)
    assert result.audio == "aac" and result.audio_start_delta_ms == 0.0


# ------------------------------------------------------------------------------------------------------ audio


@pytest.mark.parametrize("name, action", [
    ("start5.mp4", "copy"), ("start.ts", "copy"), ("start1e5.mkv", "copy"), ("ac3.mkv", "copy"),
    ("opus_at_0.3.mkv", "aac"), ("opus_at_1e5.mkv", "aac"), ("pcm16k_at_0.01.mov", "aac"), ("audio.mp3", "aac"), ("audio.wav", "aac"),
])
def test_audio_sample_0_keeps_its_time_and_no_sample_moves(sources, reencoded, name, action):
    # Before: every start dropped to 0 (5 s, 1.4 s, 100000 s); re-encoded AAC started 21.3 ms early (1024 priming
    # samples presented: the Opus source starting at 0.3 s). The MP3's LAME header delay (23 ms, FFmpeg's start) is
    # not time: read_audio starts it at 0 (loaders.media.audio_timeline_shift_seconds), and so does the re-encode.
    out, result = reencoded(name)
    assert result.audio == action
    source = loaders.read_audio(str(sources / name))
    rate = source.sample_rate
    for backend in ("pyav", "auto"):  # auto: torchcodec where it can answer exactly
        got = loaders.read_audio(str(out), backend=backend)
        assert got.sample_rate == rate
        assert got.start_seconds == pytest.approx(source.start_seconds, abs=0.5 / rate), backend
        extra = got.samples.shape[1] - source.samples.shape[1]
        if action == "copy":
            assert extra == 0, backend  # the same packets: the same samples
        else:
            assert 0 <= extra < 1024, backend  # AAC's last frame is padded after the source's last sample
    assert _content_lag_samples(source, got) == 0
    assert result.audio_start_delta_ms == pytest.approx(0.0, abs=500 / rate)


def test_the_aac_priming_is_skipped_by_the_edit_list(sources, reencoded):
    # The two layouts FFmpeg's muxer writes for a re-encoded track that starts after 0 (avalign.preprocess._mp4_edits),
    # both rewritten to [empty edit up to the start, (D', 1024)]; ffprobe (players' view) agrees on the start.
    from avalign.preprocess import audio_edit_list

    # opus_at_0.3.mkv: muxed [empty edit, (D, 0)], all 1024 priming samples presented (opus_at_1e5.mkv: the same
    # with 64-bit entries); pcm16k_at_0.01.mov: muxed [(D, 1024 - 160)], 160 priming samples presented first.
    for name in ("opus_at_0.3.mkv", "opus_at_1e5.mkv", "pcm16k_at_0.01.mov"):
        out, _ = reencoded(name)
        (empty, empty_media_time), (duration, media_time) = audio_edit_list(out.read_bytes())
        assert (empty_media_time, media_time) == (-1, 1024) and empty > 0 and duration > 0
        ffprobe_start = subprocess.check_output(["ffprobe", "-v", "error", "-select_streams", "a:0", "-show_entries",
                                                 "stream=start_time", "-of", "csv=p=0", str(out)], text=True)
        source_start = loaders.read_audio(str(sources / name)).start_seconds
        assert float(ffprobe_start) == pytest.approx(source_start, abs=1e-6)


def test_audio_before_zero_is_dropped_and_the_rest_keeps_its_time(sources, reencoded, caplog):
    # MP4 cannot present times before 0. Before: the first 50 ms were cut by an edit list the readers disagree on
    # (PyAV: sample 0 at +0.33 ms, torchcodec: -7 ms; the content 16 samples late), silently. Now: the audio is
    # encoded from the sample that belongs at 0, every kept sample at its source time; +50 ms recorded and logged.
    with caplog.at_level(logging.WARNING):
        out, result = reencoded("pcm_at_-0.05.mkv")
    assert (result.video_start_delta_ms, result.audio_start_delta_ms) == (0.0, 50.0)
    np.testing.assert_allclose(ffprobe_frame_times(out), ffprobe_frame_times(sources / "pcm_at_-0.05.mkv"),
                               rtol=0, atol=1e-6)
    source = loaders.read_audio(str(sources / "pcm_at_-0.05.mkv"))
    assert source.start_seconds == pytest.approx(-0.05)
    for backend in ("pyav", "auto"):
        got = loaders.read_audio(str(out), backend=backend)
        assert got.start_seconds == pytest.approx(0.0, abs=0.5 / source.sample_rate), backend
        assert _content_lag_samples(source, got) == 0, backend
    assert any("first audio time is +50 ms from the source's (media before 0 is not kept" in r.getMessage()
               for r in caplog.records)


def test_reencode_gives_the_same_bytes_twice(sources, reencoded):
    from avalign.preprocess import reencode_mp4

    for name in ("opus_at_0.3.mkv", "pcm16k_at_0.01.mov", "start5.mp4"):  # both edit-list rewrites and a copy
        first, _ = reencoded(name)
        again = reencode_mp4((sources / name).read_bytes(), label=name, timeout_seconds=120)
        assert again.data == first.read_bytes(), name


def test_a_reencode_past_its_time_is_a_timeout_skip(sources):
    from avalign.preprocess import reencode_mp4
    from loaders.errors import DecodeTimeout

    with pytest.raises(DecodeTimeout, match=r"start5\.mp4: ffmpeg re-encode ran past 0\.001 s"):
        reencode_mp4((sources / "start5.mp4").read_bytes(), label="start5.mp4", timeout_seconds=0.001)


def test_skip_priming_refuses_a_layout_it_does_not_know(reencoded):
    from avalign.preprocess import audio_edit_list, skip_priming

    out, _ = reencoded("audio.wav")  # starts at 0: FFmpeg's own edit [(D, 1024)] already skips the priming
    data = out.read_bytes()
    assert audio_edit_list(data)[0][1] == 1024
    with pytest.raises(ValueError, match=r"not an encoder priming of 1024 samples of which 1024 are presented"):
        skip_priming(data, presented_samples=1024, priming_samples=1024)
    with pytest.raises(ValueError, match=r"presented_samples = 2000 is more than priming_samples = 1024"):
        skip_priming(data, presented_samples=2000, priming_samples=1024)


def test_the_streams_the_loaders_read_are_the_ones_reencoded(tmp_path):
    # Before: "-map 0:v:0" took the first video stream (64x48) where the loaders read FFmpeg's best (160x120), and
    # an M4A's cover art (attached picture) was mapped as video: ffmpeg refused it and the sample was skipped.
    import hostile_inputs as hostile
    from avalign.preprocess import reencode_mp4

    hostile.two_video_streams(tmp_path / "two.mp4")
    hostile.cover_art_audio(tmp_path / "cover.m4a", tmp_path)
    two = reencode_mp4((tmp_path / "two.mp4").read_bytes(), label="two.mp4", timeout_seconds=120)
    (tmp_path / "two.out.mp4").write_bytes(two.data)
    source, got = loaders.read_video(str(tmp_path / "two.mp4")), loaders.read_video(str(tmp_path / "two.out.mp4"))
    assert tuple(source.frames.shape[1:3]) == tuple(got.frames.shape[1:3]) == (120, 160)
    np.testing.assert_allclose(got.pts_seconds.numpy(), source.pts_seconds.numpy(), rtol=0, atol=1e-9)
    cover = reencode_mp4((tmp_path / "cover.m4a").read_bytes(), label="cover.m4a", timeout_seconds=120)
    (tmp_path / "cover.out.mp4").write_bytes(cover.data)
    assert cover.record() == {"audio": "copy", "video_start_delta_ms": None, "audio_start_delta_ms": 0.0}
    with pytest.raises(loaders.DecodeError, match="no video stream"):
        loaders.read_video(str(tmp_path / "cover.out.mp4"))
    a, b = loaders.read_audio(str(tmp_path / "cover.m4a")), loaders.read_audio(str(tmp_path / "cover.out.mp4"))
    assert (b.start_seconds, b.samples.shape) == (a.start_seconds, a.samples.shape)


# ------------------------------------------------------------------------------------- end to end, with truth


def test_a_transcript_word_lands_on_the_same_frame(sources, tmp_path):
    # The source starts at 5 s; the word is stamped on its clock at 5.51 s (frame 15, pts 5.5). Before: the
    # output started at 0, so the word fell after the last frame.
    from avalign.preprocess import preprocess

    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "clip.mp4").write_bytes((sources / "start5.mp4").read_bytes())
    (raw / "clip.srt").write_text("1\n00:00:05,510 --> 00:00:05,900\nhello\n")
    result = preprocess(str(raw), str(tmp_path / "out"), reencode="mp4", progress=False)
    assert result.num_skipped == 0
    with tarfile.open(tmp_path / "out" / "shard-000000.tar") as tar:
        media = tar.extractfile("clip.mp4").read()
        align = json.load(io.BytesIO(tar.extractfile("clip.align.json").read()))
        spans = json.load(io.BytesIO(tar.extractfile("clip.transcript.json").read()))["spans"]
    word_seconds = spans[0]["start_seconds"]
    assert word_seconds == pytest.approx(5.51)
    frame_of = lambda pts: int(np.searchsorted(pts, word_seconds, side="right")) - 1  # noqa: E731
    source_pts = loaders.read_video(str(raw / "clip.mp4")).pts_seconds.numpy()
    output_pts = loaders.read_video(media).pts_seconds.numpy()
    assert frame_of(source_pts) == frame_of(output_pts) == 15
    assert output_pts[15] == pytest.approx(source_pts[15], abs=1e-9)
    assert align["reencode"] == {"audio": "copy", "video_start_delta_ms": 0.0, "audio_start_delta_ms": 0.0}
    assert align["video"]["start_seconds"] == pytest.approx(5.0)


@pytest.mark.parametrize("key", ["clip01", "clip02", "clip03"])
def test_a_clip_with_known_offset_measures_the_same_after(key, tmp_path):
    # sample_data (avalign.synth, known truth). clip01.mkv: H.264 at 29.97 + Opus, video from 7 ms, truth -85 ms:
    # -82.5 measured on the source, -68.8 after main's re-encode. clip02.webm: VP9 + Opus, truth 0: -2.2, then
    # +11.8. clip03.mov: AAC from 0.376 s (copied now), truth 260: 258.9, then 258.3. Opus is encoded to AAC.
    import avalign
    from avalign.preprocess import reencode_mp4

    clip = sample_truth()[key]
    source = REPO / "sample_data" / clip["media"]
    result = reencode_mp4(source.read_bytes(), label=clip["media"], timeout_seconds=120)
    out = tmp_path / f"{key}.mp4"
    out.write_bytes(result.data)
    before, after = avalign.measure(str(source)), avalign.measure(str(out))
    assert before["av_offset_ms"] is not None and after["av_offset_ms"] is not None
    assert after["av_offset_ms"] == pytest.approx(before["av_offset_ms"], abs=1.0)
    assert abs(after["av_offset_ms"] - clip["av_offset_ms"]) < 5.0
    assert after["video"]["start_seconds"] == pytest.approx(before["video"]["start_seconds"], abs=1e-9)
    assert after["audio"]["start_seconds"] == pytest.approx(before["audio"]["start_seconds"], abs=1e-9)
