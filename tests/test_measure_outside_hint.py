"""``avalign measure``'s line about transcript spans left out names the aligned window, and when the audio runs past
the video's end (the window is the video's timeline) says that, instead of suggesting a transcript of another clip
or stamps in the wrong unit. Oracles: the video's duration from ffprobe and the audio's length as the clip was
built (6 s of clip00's audio + 9 s of tone, AAC)."""
from __future__ import annotations

import re
import subprocess

from avalign import cli
from tests.conftest import SAMPLE_DATA, ffmpeg

CUES = "1\n00:00:01,013 --> 00:00:02,508\nMaps show hidden valleys\n\n2\n00:00:07,000 --> 00:00:08,000\nafter the end\n"


def _stream_duration(path, stream: str) -> float:
    out = subprocess.check_output(["ffprobe", "-v", "error", "-select_streams", stream, "-show_entries",
                                   "stream=duration", "-of", "csv=p=0", str(path)], text=True)
    return float(out.strip())


def test_words_after_the_video_ends_are_said_to_be_past_its_end(tmp_path, capsys):
    clip = tmp_path / "long_audio.mp4"
    ffmpeg("-i", str(SAMPLE_DATA / "clip00.mp4"), "-f", "lavfi", "-i", "sine=f=300:sample_rate=48000:duration=9",
           "-filter_complex", "[0:a][1:a]concat=n=2:v=0:a=1[a]", "-map", "0:v", "-map", "[a]", "-c:v", "copy",
           "-c:a", "aac", str(clip))
    srt = tmp_path / "long_audio.srt"
    srt.write_text(CUES)
    assert cli.main(["measure", str(clip), "--transcript", str(srt), "--av-offset-ms", "0"]) == 0
    out = capsys.readouterr().out
    video_seconds = _stream_duration(clip, "v:0")
    assert f"lie outside the media's aligned window [0.000, {video_seconds:.3f}) s" in out
    audio_stop = float(re.search(r"the audio runs to ([0-9.]+) s, past the video's end", out).group(1))
    assert abs(audio_stop - _stream_duration(clip, "a:0")) < 0.025  # AAC's last frame: up to 1024 samples of padding
    assert "another clip" not in out


def test_spans_far_outside_keep_the_other_clip_hint(tmp_path, capsys):
    srt = tmp_path / "far.srt"
    srt.write_text("1\n00:00:01,013 --> 00:00:02,508\nMaps show hidden valleys\n\n2\n00:10:00,000 --> 00:10:01,000\nfar\n")
    assert cli.main(["measure", str(SAMPLE_DATA / "clip00.mp4"), "--transcript", str(srt), "--av-offset-ms", "0"]) == 0
    out = capsys.readouterr().out
    assert "1 word(s)/segment(s) of the transcript lie outside the media's aligned window [0.000, 6.000) s" in out
    assert "a transcript of another clip, or stamps in the wrong unit?" in out
