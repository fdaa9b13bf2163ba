"""adv63b: adversarial round on opus63 (windowed audio on the whole read's sample grid) and user63 (BENCHMARKS.md,
"adv63b").

Each test asserts against an oracle (the clip's whole audio as read, an uninterrupted run's batches) and failed before
its fix.
"""
from __future__ import annotations

import io

import numpy as np
import pytest

from loaders import read_audio
from tests.conftest import encode_once


class _Pipe(io.RawIOBase):
    """A binary stream read once, front to back (a pipe, a socket, an HTTP body): ``seekable()`` is False."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        chunk = self._data.read(len(buffer))
        buffer[:len(chunk)] = chunk
        return len(chunk)


class _ReadOnly:
    """An object with ``read`` alone (no ``seek``, no ``seekable``)."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)

    def read(self, size: int = -1) -> bytes:
        return self._data.read(size)


@pytest.mark.parametrize("wrap", [_Pipe, _ReadOnly])
def test_a_seeked_opus_window_from_a_pipe_is_the_whole_reads_samples(tmp_path, wrap):
    """A window past 2 s of WebM Opus read from a file object that cannot seek: opus63's second open of the source
    (after the grid's decode) started where the first stopped reading, and a readable file was refused as
    "not audio or video that FFmpeg can read". Now it is read once, without the grid, and its samples are the whole
    read's at the same times."""
    path = tmp_path / "tone.webm"
    data = encode_once(path, "-f", "lavfi", "-i", "sine=f=440:r=48000:d=8", "-c:a", "libopus")
    whole = read_audio(str(path), backend="pyav")
    window = read_audio(wrap(data), start_seconds=5.371, stop_seconds=6.371, name="tone.webm")
    first = int(round((window.start_seconds - whole.start_seconds) * whole.sample_rate))
    assert window.start_seconds == pytest.approx(5.371, abs=1 / 48000)
    assert window.samples.shape == (1, 48000)
    np.testing.assert_allclose(window.samples.numpy(), whole.samples.numpy()[:, first:first + 48000], atol=1e-6)


def _batch_bytes(batch):
    """A batch as its keys and the bytes of its frames and audio."""
    return batch.sample_keys, batch.frames.numpy().tobytes(), batch.audio.numpy().tobytes()


@pytest.mark.parametrize("build", ["make_loader", "make_dataset"])
def test_set_epoch_twice_after_a_restore_keeps_the_restored_position(build):
    """``load_state_dict(mid-epoch state); set_epoch(e); set_epoch(e)`` (the loop and a callback both calling it):
    user63 kept the restored position for the first call only; the second started epoch e afresh, silently, and the
    batches before the checkpoint were read twice. Oracle: the uninterrupted run's batches after the checkpoint (keys
    and tensor bytes)."""
    import pathlib

    import loaders

    urls = str(pathlib.Path(__file__).resolve().parent.parent / "sample_data" / "shards" / "shard-{000000..000001}.tar")

    def make():
        return getattr(loaders, build)(urls, seed=0, budgets=(240, 128_000, 64), window_seconds=2.0)

    loader = make()
    batches = iter(loader)
    for _ in range(2):
        next(batches)
    state = loader.state_dict()
    rest = [_batch_bytes(b) for b in batches]
    assert rest

    resumed = make()
    resumed.load_state_dict(state)
    resumed.set_epoch(0)
    resumed.set_epoch(0)
    assert [_batch_bytes(b) for b in resumed] == rest


def test_a_misnamed_transcript_json_is_parsed_until_its_warning_is_given(caplog):
    """Every sample with a tagged JSON member (``KEY.asr63b.json``: a transcript under a name that is not read) had it
    parsed twice by user63's warning, after the warning (given once) too: 95 ms a sample for a word-level WhisperX JSON
    of an hour. Now it is read at the first sample only; the warning is the same. Oracle: the members ``read`` is
    asked for, sample by sample, and the warnings given."""
    import json
    import logging

    from loaders.transcripts import pick_transcript

    words = [{"word": "hi", "start": i * 0.3, "end": i * 0.3 + 0.2} for i in range(30)]
    transcript = json.dumps({"segments": [{"start": 0.0, "end": 9.0, "text": "hi " * 30, "words": words}]}).encode()
    asked = []

    def sample(key):
        members = {"__key__": key, "__url__": "s.tar", "mp4": b"", "asr63b.json": transcript,
                   "json": json.dumps({"url": "u", "caption": "c"}).encode(), "txt": b"a caption"}

        def read(ext):
            asked.append((key, ext))
            return members[ext]
        return members, read

    with caplog.at_level(logging.WARNING, logger="loaders"):
        for key in ("k0", "k1", "k2"):
            assert pick_transcript(*sample(key)) is None
    said = [r.getMessage() for r in caplog.records if "KEY.asr63b.json" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith("s.tar:k0: KEY.asr63b.json holds a transcript under a name"), said
    assert [a for a in asked if a[1] == "asr63b.json"] == [("k0", "asr63b.json")]


@pytest.mark.parametrize("head", ["[ti:A song]\n[ar:Someone]\n[length: 00:04]\n", "[offset:+100]\n", ""])
def test_lrc_lyrics_with_id_tags_get_the_lrc_hint(tmp_path, head):
    """Most LRC files start with ID tags (``[ti:…]``, ``[ar:…]``, ``[offset:…]``): user63's LRC rule knew only a time
    tag first, and such a file was sniffed as JSON and refused as "invalid JSON: Expecting value". Now it gets the hint
    that FFmpeg reads .lrc lyrics and converts them. Oracle: FFmpeg's lrc demuxer reads the same file."""
    import subprocess

    from loaders import TranscriptError, read_transcript

    text = head + "[00:01.50]hello world\n[00:03.00]second line\n"
    path = tmp_path / "lyrics.txt"
    path.write_text(text)
    probe = subprocess.run(["ffprobe", "-v", "error", "-f", "lrc", "-show_entries", "format=format_name", "-of",
                            "csv=p=0", str(path)], capture_output=True, text=True)
    assert probe.stdout.strip() == "lrc", probe.stderr
    with pytest.raises(TranscriptError) as caught:
        read_transcript(text.encode(), name="lyrics")
    message = str(caught.value)
    assert "cannot tell the transcript format" in message and ".lrc lyrics" in message, message
    assert "invalid JSON" not in message
