"""Adversarial round of 2026-12-06 (fifth session) on the training path: what a training run met.

Oracles: members and files built here with known content (a word count, an empty audio track, a non-UTF-8 byte, a
codec tag FFmpeg does not know, one frame, a closed port), and the loader's and preprocess's documented behaviour
(README: "Video-only clips load with an empty audio span"; every skip is counted and named).
"""
from __future__ import annotations

import io
import json
import logging
import tarfile

import pytest

import loaders
from avcore import DecodeError, TranscriptError
from tests.conftest import encode_once

SHARD = "sample_data/shards/shard-000000.tar"


def _tar(path, members: list[tuple[str, bytes]]) -> str:
    with tarfile.open(path, "w") as archive:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return str(path)


def _skips(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("skipping")]


def _whisperx(num_words: int) -> bytes:
    words = [{"word": f"w{i}", "start": round(i * 0.36, 3), "end": round(i * 0.36 + 0.3, 3), "score": 0.9}
             for i in range(num_words)]
    segments = [{"start": words[i]["start"], "end": words[min(i + 9, num_words - 1)]["end"],
                 "text": " ".join(w["word"] for w in words[i:i + 10]), "words": words[i:i + 10]}
                for i in range(0, num_words, 10)]
    return json.dumps({"segments": segments}, indent=1).encode()  # pretty-printed, as sample_data/clip00.json


def test_a_long_word_level_json_is_not_refused_for_its_markup():
    """Before: 25,000 words refused as "more than 200000 words": the check before parsing counted the JSON's
    whitespace tokens (about ten per word object) as words."""
    transcript = loaders.read_transcript(_whisperx(25_000), name="long.json")
    assert len(transcript.words) == 25_000
    assert len(transcript.spans) == 2_500
    with pytest.raises(TranscriptError, match="over max_words=20000") as refused:  # the parsed count still decides
        loaders.read_transcript(_whisperx(25_000), name="long.json", max_words=20_000)
    assert refused.value.reason == "too_large"


def test_a_long_textgrid_is_not_refused_for_its_markup():
    intervals = "".join(f'        intervals [{i + 1}]:\n            xmin = {i * 0.4:.1f}\n            xmax = {i * 0.4 + 0.4:.1f}\n'
                        f'            text = "w{i}"\n' for i in range(3000))
    text = ('File type = "ooTextFile"\nObject class = "TextGrid"\n\nxmin = 0\nxmax = 1200\ntiers? <exists>\nsize = 1\n'
            'item []:\n    item [1]:\n        class = "IntervalTier"\n        name = "words"\n        xmin = 0\n'
            f'        xmax = 1200\n        intervals: size = 3000\n{intervals}')
    transcript = loaders.read_transcript(text.encode(), name="long.TextGrid", max_words=5_000)
    assert sum(len(s.words) or len(s.text.split()) for s in transcript.spans) == 3000


@pytest.fixture(scope="module")
def empty_audio_track(tmp_path_factory):
    out = tmp_path_factory.mktemp("empty_audio") / "a.mkv"
    encode_once(out, "-f", "lavfi", "-i", "testsrc=size=64x48:rate=25:duration=2", "-f", "lavfi", "-i",
                "sine=sample_rate=16000", "-map", "0", "-map", "1", "-c:v", "libx264", "-pix_fmt", "yuv420p",
                "-c:a", "pcm_s16le", "-frames:a", "0", "-t", "2")
    return out


def test_an_empty_audio_track_is_missing_audio_not_a_corrupt_file(empty_audio_track):
    for backend in ("pyav", "auto"):
        with pytest.raises(DecodeError, match="holds no samples") as missing:
            loaders.read_audio(str(empty_audio_track), backend=backend)
        assert missing.value.reason == "missing_audio"


def test_a_video_with_an_empty_audio_track_loads_as_video_only(tmp_path, empty_audio_track, caplog):
    """Before: skipped as ``decode`` ("the audio stream decoded to no samples"), while a video with no audio stream
    loads with an empty audio span."""
    shard = _tar(tmp_path / "s.tar", [("a.mkv", empty_audio_track.read_bytes()), ("a.txt", b"empty audio track")])
    loader = loaders.make_loader(shard, seed=0, frame_size=(16, 16))
    with caplog.at_level(logging.WARNING, logger="loaders"):
        batches = list(loader)
    assert [k for b in batches for k in b.sample_keys] == ["a"]
    assert loader.stats.skipped == {}


def test_torchcodec_says_missing_audio_for_a_file_without_audio(tmp_path):
    video_only = tmp_path / "v.mp4"
    encode_once(video_only, "-f", "lavfi", "-i", "testsrc=size=64x48:rate=25:duration=1", "-c:v", "libx264",
                "-pix_fmt", "yuv420p")
    with pytest.raises(DecodeError, match="no audio stream") as missing:
        loaders.read_audio(str(video_only), backend="torchcodec")
    assert missing.value.reason == "missing_audio"


@pytest.fixture(scope="module")
def small_clip(tmp_path_factory):
    out = tmp_path_factory.mktemp("small") / "v.mp4"
    return encode_once(out, "-f", "lavfi", "-i", "testsrc=size=64x48:rate=25:duration=1", "-f", "lavfi", "-i",
                       "sine=sample_rate=16000:duration=1", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac")


def test_a_caption_that_is_not_utf8_is_a_named_skip_in_the_loader_and_in_preprocess(tmp_path, small_clip, caplog):
    """Before: the loader's skip said a bare "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xe9", and
    preprocess kept the sample, which training then skipped at every epoch. (Since round 39 a cp1252 caption is read
    as such; UTF-8 with a broken byte, as here, is still refused.)"""
    from avalign.cli import main

    members = []
    for key in ("a", "b", "c"):
        members += [(f"{key}.mp4", small_clip), (f"{key}.txt", b"caf\xc3\xa9 \xe9" if key == "b" else b"fine caption")]
    shard = _tar(tmp_path / "s-0.tar", members)
    loader = loaders.make_loader(shard, seed=0, frame_size=(16, 16))
    with caplog.at_level(logging.WARNING, logger="loaders"):
        keys = sorted(k for b in loader for k in b.sample_keys)
    assert keys == ["a", "c"] and loader.stats.skipped == {"transcript": 1}
    (message,) = [m for m in _skips(caplog) if "key='b'" in m]
    assert "b.txt: byte 6: cannot decode as utf-8" in message and "re-save the caption as UTF-8" in message

    out = tmp_path / "out"
    assert main(["preprocess", shard, str(out), "--no-progress"]) == 0
    names = tarfile.open(out / "shard-000000.tar").getnames()
    assert "b.txt" not in names and "b.mp4" not in names and "a.txt" in names
    rows = [json.loads(line) for line in (out / "skipped.jsonl").read_text().splitlines()]
    assert [(r["key"], r["reason"]) for r in rows] == [("b", "transcript")]


def test_metadata_that_is_not_json_holds_no_caption():
    """A guard, not a fix (it held before): broken metadata never becomes a caption, nor hides the ``txt`` one."""
    from loaders.pipeline import caption_text

    assert caption_text({"__key__": "k", "json": b"\xff\xfe not json"}) is None
    assert caption_text({"__key__": "k", "json": b"{broken", "txt": b"the caption"}) == "the caption"


def test_a_video_stream_ffmpeg_cannot_identify_is_a_decode_error_naming_the_file(tmp_path, small_clip):
    """Before: "AttributeError: 'NoneType' object has no attribute 'name'" (PyAV gives no codec context)."""
    unknown = tmp_path / "zzzz.mp4"
    unknown.write_bytes(small_clip.replace(b"avc1", b"zzzz"))  # the sample entry's codec tag (and a brand)
    with pytest.raises(DecodeError, match="cannot identify the video stream's codec") as refused:
        loaders.read_video(str(unknown), backend="pyav")
    assert str(unknown) in str(refused.value) and "NoneType" not in str(refused.value)
    with pytest.raises(DecodeError, match="cannot identify the video stream's codec"):
        loaders.probe_video(str(unknown))


def test_measure_on_a_one_frame_clip_says_why_there_is_no_av_offset(tmp_path, capsys):
    """Before: ``av_offset_ms`` null with ``av_abstain`` null and ``av_method`` "none"."""
    from avalign.cli import main

    clip = tmp_path / "one.mkv"
    encode_once(clip, "-f", "lavfi", "-i", "testsrc=size=64x48:rate=25", "-f", "lavfi", "-i",
                "sine=f=440:sample_rate=16000", "-t", "0.0001", "-c:v", "libx264", "-pix_fmt", "yuv420p",
                "-c:a", "pcm_s16le")
    assert main(["measure", str(clip), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["video"]["num_frames"] == 1 and record["audio"]["num_samples"] > 0
    assert record["av_offset_ms"] is None and record["av_method"] == "abstain:no_visual_events"
    assert record["av_abstain"]["reason"] == "no_visual_events" and "1 video frame" in record["av_abstain"]["found"]


def test_an_http_shard_that_cannot_be_fetched_says_why(caplog):
    """Before: "cannot open shard: http://127.0.0.1:9/x.tar" (fsspec's FileNotFoundError without its cause)."""
    loader = loaders.make_loader([SHARD, "http://127.0.0.1:9/x.tar"], seed=0, frame_size=(16, 16))
    with caplog.at_level(logging.WARNING, logger="loaders"):
        keys = [k for b in loader for k in b.sample_keys]
    assert len(keys) == 3 and loader.stats.skipped == {"open": 1}
    (message,) = [m for m in _skips(caplog) if "127.0.0.1:9" in m]
    assert "ClientConnectorError" in message and "Cannot connect to host 127.0.0.1:9" in message


def test_preprocess_reads_a_directory_of_shards(tmp_path):
    """Before: the .tar files were "ignored, not media" and the command failed with "no samples found"."""
    import shutil

    from avalign.cli import main

    shards = tmp_path / "shards"
    shards.mkdir()
    shutil.copy(SHARD, shards / "shard-000000.tar")
    out = tmp_path / "out"
    assert main(["preprocess", str(shards), str(out), "--no-progress"]) == 0
    keys = sorted({n.split(".")[0] for n in tarfile.open(out / "shard-000000.tar").getnames()})
    expected = sorted({n.split(".")[0] for n in tarfile.open(SHARD).getnames()})
    assert keys == expected and len(keys) == 3


def test_a_directory_with_media_below_it_stays_a_directory_of_media(tmp_path, small_clip):
    """Shards at the top and media in a subdirectory: the media are the samples (the .tar is said to be ignored)."""
    import shutil

    from avalign.preprocess import list_inputs

    root = tmp_path / "raw"
    (root / "clips").mkdir(parents=True)
    shutil.copy(SHARD, root / "old.tar")
    (root / "clips" / "c1.mp4").write_bytes(small_clip)
    plan = list_inputs(str(root))
    assert [s.key for s in plan.samples] == ["clips/c1"]


# ------------------------------------------------------------------ the offline tools (second helper of the round)


def test_preprocess_skips_a_named_pipe_and_a_broken_link_and_writes_the_rest(tmp_path, small_clip):
    """Before: a FIFO named ``pipe.mp4`` hung the run forever (its open() blocks, outside ``--timeout``), and one
    broken symbolic link aborted the whole run (``os.stat`` while planning)."""
    import os
    import subprocess
    import sys

    src = tmp_path / "in"
    src.mkdir()
    (src / "good.mp4").write_bytes(small_clip)
    os.mkfifo(src / "pipe.mp4")
    os.symlink(tmp_path / "gone.mp4", src / "gone.mp4")
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "avalign", "preprocess", str(src), str(out), "--no-progress",
                           "--timeout", "30"], capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    assert sorted(n for n in tarfile.open(out / "shard-000000.tar").getnames() if n.endswith(".mp4")) == ["good.mp4"]
    rows = {r["key"]: r for r in map(json.loads, (out / "skipped.jsonl").read_text().splitlines())}
    assert sorted(rows) == ["gone", "pipe"] and {r["reason"] for r in rows.values()} == {"read"}
    assert "not a regular file" in rows["pipe"]["message"]
    assert "symbolic link whose target is missing" in rows["gone"]["message"]


def test_preprocess_refuses_a_named_pipe_given_as_the_input(tmp_path):
    import os

    from avalign.preprocess import list_inputs

    fifo = tmp_path / "s.tar"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="not a regular file or a directory.*pipe:COMMAND"):
        list_inputs(str(fifo))


def test_report_on_preprocess_output_with_every_sample_skipped_lists_the_skips(tmp_path, capsys):
    """Before: no shard (every sample skipped), so ``report`` took the output for a media directory: its
    state/manifest/skipped files became ``unknown_extension`` inputs and the two decode skips were lost."""
    from avalign.cli import main

    src = tmp_path / "in"
    src.mkdir()
    for key in ("a", "b"):
        (src / f"{key}.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42 not a movie at all")
    out = tmp_path / "out"
    main(["preprocess", str(src), str(out), "--no-progress"])
    assert list(out.glob("*.tar")) == []
    capsys.readouterr()
    main(["report", str(out), "--out", str(tmp_path / "rep"), "--no-progress"])
    report = json.loads((tmp_path / "rep" / "report.json").read_text())
    skipped = report["skipped"]
    assert sorted((s["key"], s["reason"]) for s in skipped) == [("a", "decode"), ("b", "decode")]


@pytest.mark.parametrize("option, value, message", [("--sample-rate", "0", "argument --sample-rate: '0' is not > 0"),
                                                     ("--sample-rate", "-8000", "argument --sample-rate: '-8000' is not > 0"),
                                                     ("--clip-pages", "-1", "--clip-pages must be an int >= 0")])
def test_report_refuses_out_of_range_options_before_any_work(tmp_path, capsys, option, value, message):
    """Before: ``--sample-rate 0`` made every clip a ``decode`` skip and exited 0; ``--clip-pages -1`` was 0. (Since
    user63, ``--sample-rate`` is refused by argparse itself, exit status 2 as a SystemExit.)"""
    from avalign.cli import main

    try:
        status = main(["report", "sample_data", "--out", str(tmp_path / "rep"), "--no-progress", option, value])
    except SystemExit as exit_:
        status = exit_.code
    assert status == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "rep" / "report.json").exists()


def test_preprocess_json_error_for_a_locked_output_names_the_output_and_says_in_use(tmp_path, capsys):
    """Before: ``file`` was the INPUT and ``reason`` ``read``."""
    import fcntl
    import os

    from avalign.cli import main
    from avcore import REASONS

    out = tmp_path / "out"
    out.mkdir()
    fd = os.open(out / ".avalign-preprocess.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # another run holds it (flock locks are per open file)
        os.pwrite(fd, b"4242\n", 0)
        assert main(["preprocess", "sample_data", str(out), "--no-progress", "--json"]) == 2
    finally:
        os.close(fd)
    error = json.loads(capsys.readouterr().out)["error"]
    assert (error["file"], error["reason"]) == (str(out), "in_use") and "in_use" in REASONS
    assert "pid 4242" in error["message"]


def test_a_disk_full_error_names_the_output_and_hints_once(tmp_path):
    """A real write failure: a file-size limit (RLIMIT_FSIZE, EFBIG) under the first shard's size."""
    import resource
    import signal
    import subprocess
    import sys

    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead of killing the process
        resource.setrlimit(resource.RLIMIT_FSIZE, (300_000, 300_000))

    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "avalign", "preprocess", "sample_data", str(out), "--no-progress",
                           "--json"], capture_output=True, text=True, preexec_fn=limited, timeout=300)
    assert proc.returncode == 2
    error = json.loads(proc.stdout)["error"]
    assert (error["file"], error["reason"]) == (str(out), "disk_full")
    assert error["message"].lower().count("free space") == 1 and proc.stderr.lower().count("free space") == 1


@pytest.mark.parametrize("argv", [["measure", "sample_data/clip00.mp4", "--av-offset-ms", "nan"],
                                  ["measure", "sample_data/clip00.mp4", "--max-offset-ms", "inf"],
                                  ["report", "sample_data", "--out", "unused", "--fail-over-ms", "nan"],
                                  ["preprocess", "sample_data", "unused", "--timeout", "nan"]])
def test_number_options_refuse_nan_and_inf_by_their_flag(argv, capsys, tmp_path):
    """Before: ``--av-offset-ms nan`` failed later with "av_offset_ms must be a finite number, got av_offset_ms = nan"
    (the Python name, no usage)."""
    from avalign.cli import main

    argv = [str(tmp_path / "unused") if a == "unused" else a for a in argv]

    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    flag = argv[-2]
    assert f"argument {flag}: '{argv[-1]}' is not a finite number" in capsys.readouterr().err


def test_linked_directories_are_read_once_by_preprocess_and_report(tmp_path, small_clip):
    """Before: preprocess skipped a linked directory without a word (``os.walk`` does not follow links)."""
    import os

    from avalign.preprocess import list_inputs
    from avalign.report import ClipInput, iter_inputs

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "b.mp4").write_bytes(small_clip)
    root = tmp_path / "raw"
    root.mkdir()
    (root / "a.mp4").write_bytes(small_clip)
    os.symlink(elsewhere, root / "part2")
    os.symlink(root, elsewhere / "back")  # a loop: each real directory is read once
    assert sorted(s.key for s in list_inputs(str(root)).samples) == ["a", "part2/b"]
    clips = sorted(os.path.relpath(item.media, root) for item in iter_inputs(str(root)) if isinstance(item, ClipInput))
    assert clips == ["a.mp4", "part2/b.mp4"]
