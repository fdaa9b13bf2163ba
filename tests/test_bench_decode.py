"""``avalign bench decode --long`` on a short generated pair: every tool answers the same request."""
import shutil

import pytest

from avalign.bench import bench_long, format_long_table


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg is not installed")
def test_bench_long_runs_every_tool_on_the_same_request(tmp_path):
    # 20 s is the shortest file holding the sparse case's 10 s window in its middle; 160x90 instead of 480p
    # frames: the same requests and code paths with 1/28 of the pixels to decode.
    result = bench_long(threads=1, repeats=1, work_dir=str(tmp_path), seconds=20, full_clips=(("320x240", 2),),
                        video_size="160x90")
    assert result["video"].endswith("bench_160x90_20s.mp4")
    for case, frames in (("sparse", 8), ("sparse_224", 8), ("one_fps", 20), ("full_240p", 60)):
        rows = {r["tool"]: r for r in result[case]}
        ours = "avalign read_video(backend=pyav), warm: result pool kept" if case.startswith("full") else "avalign read_video(fps=)"
        assert rows[ours]["frames"] == frames
        assert any("backend=torchcodec" in name for name in rows)  # both backends in the same run
        if case.startswith("full"):  # and read_video cold (pool released first) beside warm
            assert rows["avalign read_video(backend=pyav), cold: result pool released"]["frames"] == frames
            assert rows["ffmpeg rgb24 piped into a NumPy array"]["frames"] == frames  # ffmpeg's frames, in memory
        for name, row in rows.items():  # every peer decoded the same number of frames (ffmpeg reports the request)
            assert row["frames"] == frames, (case, name)
            assert row["seconds"] > 0
    for case in ("audio", "audio_44k"):
        audio = {r["tool"]: r for r in result[case]}
        ours = audio["avalign read_audio(sample_rate=16000, mono)"]["frames"]
        assert abs(ours - 20 * 16000) <= 16000 * 0.05  # 20 s at 16 kHz (AAC adds up to ~1 frame of padding)
        peer = audio.get("torchcodec AudioDecoder(sample_rate, num_channels=1)")
        if peer is not None:
            assert peer["frames"] == ours  # the same sample count as torchcodec
    table = format_long_table(result)
    assert "| avalign read_video(fps=) |" in table and "speed ×" in table
    assert "44.1 kHz" in table and "full decode to RGB24, 240p" in table
