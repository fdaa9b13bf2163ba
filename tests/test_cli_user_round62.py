"""A user's defects (round 62): each test writes what the user had (subtitle files, a progress run, a report's worst
clips, whose bytes, times and values the test knows) and checks what avalign says about them against those."""
from __future__ import annotations

import hashlib
import io
import json
import logging
import re

import pytest

from avalign.cli import Progress, main
from tests.conftest import REPO, ffmpeg, tiny_clip, write_tar

SAMPLE = REPO / "sample_data"


# ---------------------------------------------------------------- 1. plain progress: the final line once


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_plain_progress_does_not_repeat_its_final_line():
    """Before: ``avalign report``'s clip pages (and ``preprocess`` of a directory) printed the same final line twice
    off a terminal (``clip pages: 2/2 page (100%), 0.18 page/s, ETA 0 s`` ×2): the periodic line fired on the last
    unit (10 s had passed) and ``close`` wrote it again. Oracle: the units and times the test counted."""
    stream, clock = io.StringIO(), _Clock()
    with Progress(total=2, desc="clip pages", unit="page", stream=stream, interval_seconds=10.0, clock=clock) as bar:
        clock.now = 5.5
        bar.update(1)
        clock.now = 11.0
        bar.update(1)  # 11 s after the start: the periodic line, already the final count
    assert stream.getvalue().splitlines() == ["clip pages: 2/2 page (100%), 0.18 page/s, ETA 0 s"]

    # The final line is still written when the last periodic one is behind the count, or its counters changed.
    stream, clock = io.StringIO(), _Clock()
    with Progress(total=3, desc="preprocess", stream=stream, interval_seconds=10.0, clock=clock) as bar:
        clock.now = 10.0
        bar.update(2, done=2, skipped=0)
        clock.now = 12.0
        bar.update(1, done=3)
    assert stream.getvalue().splitlines() == ["preprocess: 2/3 clip (67%), 0.20 clip/s, ETA 5 s, done=2, skipped=0",
                                              "preprocess: 3/3 clip (100%), 0.25 clip/s, ETA 0 s, done=3, skipped=0"]
    stream, clock = io.StringIO(), _Clock()
    with Progress(total=1, desc="report", stream=stream, interval_seconds=10.0, clock=clock) as bar:
        clock.now = 10.0
        bar.update(1)
        bar.update(0, reported=1, skipped=0)  # counters set after the count's line: a last line shows them
    assert stream.getvalue().splitlines() == ["report: 1/1 clip (100%), 0.10 clip/s, ETA 0 s",
                                              "report: 1/1 clip (100%), 0.10 clip/s, ETA 0 s, reported=1, skipped=0"]


# ---------------------------------------------------------------- 2. the report's worst clips: which offset, signed


def test_report_worst_lines_name_the_offset_and_its_sign():
    """Before: ``worst       b1  124.873 ms`` for a clip whose A/V offset was +113.482 ms and text offset -124.873 ms:
    neither which offset nor its sign (``report.json`` had both). Oracle: the offsets the test put in the summary."""
    from avalign.report import format_terminal_summary, gate, summarize

    summary = summarize([], [], gate([], fail_over_ms=None))
    summary["worst"] = [
        {"key": "a1", "shard": "out/shard-000000.tar", "offset_ms": 192.461, "av_offset_ms": -5.47, "text_offset_ms": 192.461},
        {"key": "b1", "shard": "out/shard-000000.tar", "offset_ms": 124.873, "av_offset_ms": 113.482,
         "text_offset_ms": -124.873},
        {"key": "c1", "shard": "out/shard-000000.tar", "offset_ms": 80.0, "av_offset_ms": -80.0, "text_offset_ms": None},
    ]
    worst = [line for line in format_terminal_summary(summary).splitlines() if line.startswith("worst")]
    assert worst == ["worst       a1  text 192.461 ms (A/V -5.47 ms)  (out/shard-000000.tar)",
                     "worst       b1  text -124.873 ms (A/V 113.482 ms)  (out/shard-000000.tar)",
                     "worst       c1  A/V -80.0 ms  (out/shard-000000.tar)"]


# ---------------------------------------------------------------- 3. subtitle files avalign does not take as media

VTT = "WEBVTT\n\n00:00:01.000 --> 00:00:02.500\nhello there\n"
ASS = ("[Script Info]\nScriptType: v4.00+\n\n[Events]\n"
       "Format: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text\n"
       "Dialogue: 0,0:00:01.00,0:00:02.50,Default,,0,0,0,,hello there\n")


def _measure_error(capsys, *args: str) -> dict:
    assert main(["measure", *args, "--json"]) == 2
    return json.loads(capsys.readouterr().out)["error"]


def test_a_subtitle_given_as_media_gets_a_hint_that_works(tmp_path, capsys):
    """Before: a WebVTT file given as the media was told to be named ``.webvtt`` (FFmpeg's format name; a directory
    or shard sidecar must be ``.vtt``, the only WebVTT suffix preprocess pairs), even when it was already ``.vtt``;
    an ASS file was told to be given as the transcript named ``.ass``, which is then refused. Oracle: the cue the
    test wrote, read back by following each hint."""
    import loaders

    as_mp4 = tmp_path / "talk.mp4"
    as_mp4.write_text(VTT)
    error = _measure_error(capsys, str(as_mp4))
    assert error["message"].endswith("is a subtitle file (format webvtt), not audio or video; hint: give it as the "
                                     "transcript (--transcript), named .vtt"), error
    assert ".webvtt" not in error["message"]
    renamed = as_mp4.rename(tmp_path / "talk.vtt")
    error = _measure_error(capsys, str(renamed))
    assert error["message"].endswith("hint: give it as the transcript (--transcript)"), error
    assert [(s.text, s.start_seconds, s.stop_seconds) for s in loaders.read_transcript(str(renamed)).spans] == \
        [("hello there", 1.0, 2.5)]

    ass = tmp_path / "talk.ass"
    ass.write_text(ASS)
    error = _measure_error(capsys, str(ass))
    assert error["reason"] == "decode" and "avalign does not read ass subtitles as a transcript" in error["message"]
    command = re.search(r"`(ffmpeg -i \S+ OUT\.srt)`", error["message"]).group(1)
    assert command == f"ffmpeg -i {ass} OUT.srt"
    ffmpeg("-i", str(ass), str(tmp_path / "OUT.srt"))
    assert [(s.text, s.start_seconds, s.stop_seconds) for s in loaders.read_transcript(str(tmp_path / "OUT.srt")).spans] \
        == [("hello there", 1.0, 2.5)]


def test_an_ass_transcript_is_refused_as_ass_not_as_broken_json(tmp_path, capsys, caplog):
    """Before: ``avalign measure clip.mp4 --transcript talk.ass`` said ``talk.ass: line 1 column 2: invalid JSON:
    Expecting value`` (its ``[Script Info]`` was sniffed as JSON), and ``preprocess`` of a directory with a
    ``KEY.ass`` sidecar only listed ``.ass`` among the ignored files. Oracle: the file the test wrote."""
    import loaders

    ass = tmp_path / "talk.ass"
    ass.write_text(ASS)
    for source, name in ((str(ass), "talk.ass"), (ASS.encode(), "talk.srt.bak")):  # by suffix, and by content
        with pytest.raises(loaders.TranscriptError, match=r"ASS/SSA subtitles are not read as a transcript") as info:
            loaders.read_transcript(source, name=None if name == "talk.ass" else name)
        assert "invalid JSON" not in str(info.value) and "ffmpeg -i" in str(info.value)
        assert info.value.reason == "transcript"
    # The formats it reads are untouched: the same cue as SRT, and an explicit format still parses.
    srt = b"1\n00:00:01,000 --> 00:00:02,500\nhello there\n"
    assert [(s.text, s.start_seconds) for s in loaders.read_transcript(srt, name="talk.srt").spans] == [("hello there", 1.0)]

    clip = tmp_path / "clips" / "talk.mp4"
    clip.parent.mkdir()
    tiny_clip(clip, 1.0, fps=10, sample_rate=16000)
    error = _measure_error(capsys, str(clip), "--transcript", str(ass))
    assert error["file"] == str(ass) and error["reason"] == "transcript"
    assert error["message"].startswith(f"{ass}: ASS/SSA subtitles are not read as a transcript"), error

    (clip.parent / "talk.ass").write_text(ASS)
    with caplog.at_level(logging.WARNING, logger="avalign"):
        assert main(["preprocess", str(clip.parent), str(tmp_path / "out"), "--dry-run", "--no-progress"]) == 0
    (warning,) = [r.getMessage() for r in caplog.records if "ignored" in r.getMessage()]
    assert ".ass (1)" in warning and "convert each to SRT beside its media (`ffmpeg -i KEY.ass KEY.srt`)" in warning


# ---------------------------------------------------------------- 4. README: the clip pages' names


def test_readme_names_the_clip_pages_as_report_writes_them():
    """Before: README said ``report/clips/NNNN.html``; ``avalign report`` writes ``clips/<key>-<8 hex of the key's
    SHA-1>.html`` (``a1-f29bc91b.html``). Oracle: the SHA-1 the test computes."""
    from avalign.report import clip_page_name

    readme = (REPO / "README.md").read_text()
    assert "report/clips/<key>-<8 hex>.html" in readme and "NNNN.html" not in readme
    assert clip_page_name("a1") == f"clips/a1-{hashlib.sha1(b'a1').hexdigest()[:8]}.html" == "clips/a1-f29bc91b.html"


# ---------------------------------------------------------------- 5. report --truth whose keys do not meet the clips


def test_report_says_how_the_truth_keys_met_the_clips(tmp_path, capsys):
    """Before: ``avalign report out/ --truth truth.json`` whose keys matched no clip (``A1`` for ``a1``) printed no
    residual line and nothing else: the truth was silently unused; a truth key matching no clip, or a clip without
    one, was not said either. Oracle: the keys the test wrote in the shard and the truth file."""
    import avalign

    clip = tmp_path / "clip.mp4"
    tiny_clip(clip, 1.0, fps=10, sample_rate=16000)
    record = json.dumps(avalign.measure(str(clip))).encode()
    shard = write_tar(tmp_path / "shard-000000.tar", [(f"{key}.{ext}", data) for key in ("a1", "b1", "c1")
                                                      for ext, data in (("mp4", clip.read_bytes()), ("align.json", record))])
    cases = {
        "typo.json": ({"A1": {"av_offset_ms": 0.0}},
                      "truth       0 of 3 clips have a truth entry; none for: a1, b1, c1; 1 truth key(s) match no clip: "
                      "A1 (hint: truth keys are the samples' keys, as the clip table lists them)"),
        "part.json": ({"a1": {"av_offset_ms": 0.0}, "b1": {"av_offset_ms": 0.0}, "zz": {"av_offset_ms": 1.0}},
                      "truth       2 of 3 clips have a truth entry; none for: c1; 1 truth key(s) match no clip: zz"),
    }
    for name, (clips, expected) in cases.items():
        truth = tmp_path / name
        truth.write_text(json.dumps({"clips": clips}))
        out = tmp_path / f"report-{name}"
        assert main(["report", str(shard), "--out", str(out), "--truth", str(truth), "--clip-pages", "0",
                     "--no-progress"]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert [line for line in lines if line.startswith("truth ")] == [expected], lines
        coverage = json.loads((out / "report.json").read_text())["summary"]["truth_coverage"]
        with_truth = sorted(set(clips) & {"a1", "b1", "c1"})
        assert coverage["num_clips_with_truth"] == len(with_truth) and coverage["num_truth_keys"] == len(clips)
        assert coverage["unmatched_truth_keys"] == sorted(set(clips) - {"a1", "b1", "c1"})
    assert main(["report", str(shard), "--out", str(tmp_path / "no-truth"), "--clip-pages", "0", "--no-progress"]) == 0
    assert not [line for line in capsys.readouterr().out.splitlines() if line.startswith("truth ")]


# ---------------------------------------------------------------- 6. several language-tagged subtitles: which sample


def test_the_ambiguous_language_tags_warning_names_the_sample(tmp_path, caplog):
    """Before: ``several language-tagged subtitles (de.vtt, en.vtt) and no untagged transcript: none is used`` named
    no sample, shard or file (it is said once per set of tags, so a dataset of thousands gave no lead to the one to
    fix). Oracle: the shard, key and tags the test wrote (tags no other test uses: the warning is once per process)."""
    from loaders.transcripts import pick_transcript

    vtt = VTT.encode()
    clip = tmp_path / "clip.mp4"
    tiny_clip(clip, 1.0, fps=10, sample_rate=16000)
    shard = write_tar(tmp_path / "yt-000000.tar", [("dQw4w9WgXcQ.mp4", clip.read_bytes()), ("dQw4w9WgXcQ.nl.vtt", vtt),
                                                   ("dQw4w9WgXcQ.sv.vtt", vtt)])
    with caplog.at_level(logging.WARNING, logger="loaders"):
        assert main(["preprocess", str(shard), str(tmp_path / "out"), "--dry-run", "--no-progress"]) == 0
        sample = {"__key__": "clip7", "__url__": "s-000001.tar", "mp4": b"", "da.srt": b"", "fi.srt": b""}
        assert pick_transcript(sample, sample.__getitem__) is None  # a WebDataset sample names itself
        assert pick_transcript({"mp4": b"", "is.srt": b"", "no.srt": b""}, bytes, name="talks/t9") is None
    said = [r.getMessage() for r in caplog.records if "language-tagged" in r.getMessage()]
    assert [m.split(": several", 1)[0] for m in said] == [f"{shard}:dQw4w9WgXcQ", "s-000001.tar:clip7", "talks/t9"], said
    assert "(nl.vtt, sv.vtt)" in said[0] and "(da.srt, fi.srt)" in said[1] and "(is.srt, no.srt)" in said[2]


# ---------------------------------------------------------------- 7. preprocess: members the output does not carry


def test_preprocess_says_which_shard_members_it_does_not_carry(tmp_path, caplog):
    """Before: ``avalign preprocess`` of shards whose samples carry more than media and text (a class label
    ``KEY.cls``, yt-dlp's ``KEY.info.json``) wrote output shards without them and said nothing (a directory's ignored
    files are said). Oracle: the members the test wrote; said once for all shards, not once per shard."""
    clip = tmp_path / "clip.mp4"
    tiny_clip(clip, 1.0, fps=10, sample_rate=16000)
    media = clip.read_bytes()
    first = write_tar(tmp_path / "train-000000.tar", [("a.mp4", media), ("a.cls", b"3"), ("a.info.json", b"{}"),
                                                      ("b.mp4", media), ("b.cls", b"7"), ("b.txt", b"a caption")])
    write_tar(tmp_path / "train-000001.tar", [("c.mp4", media), ("c.cls", b"1")])
    third = write_tar(tmp_path / "train-000002.tar", [("d.mp4", media), ("d.txt", b"kept")])
    with caplog.at_level(logging.WARNING, logger="avalign"):
        assert main(["preprocess", str(tmp_path / "train-{000000..000002}.tar"), str(tmp_path / "out"), "--dry-run",
                     "--no-progress"]) == 0
    said = [r.getMessage() for r in caplog.records if "not written to the output" in r.getMessage()]
    assert said == [f"4 member(s) of 2 shard(s) not written to the output shards (not media, transcripts or captions): "
                    f".cls (3), .info.json (1); first in {first}; keep the input shards for them"], said
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="avalign"):
        assert main(["preprocess", str(third), str(tmp_path / "out3"), "--dry-run", "--no-progress"]) == 0
    assert not [r for r in caplog.records if "not written to the output" in r.getMessage()]


def test_progress_of_a_run_that_resumed_everything_ends_at_eta_0():
    """Before: ``avalign preprocess`` rerun on finished output ended with ``preprocess: 4/4 clip (100%), ? clip/s,
    ETA ?``: nothing left, yet an unknown ETA. Oracle: the units the test resumed and did."""
    stream, clock = io.StringIO(), _Clock()
    with Progress(total=4, initial=4, desc="preprocess", stream=stream, interval_seconds=10.0, clock=clock):
        clock.now = 3.0
    assert stream.getvalue().splitlines() == ["preprocess: 4/4 clip (100%), ? clip/s, ETA 0 s"]
    stream, clock = io.StringIO(), _Clock()
    with Progress(total=4, initial=3, desc="preprocess", stream=stream, interval_seconds=10.0, clock=clock) as bar:
        assert bar.eta_seconds() is None  # one left, no rate yet: unknown
        clock.now = 2.0
        bar.update(1)
    assert stream.getvalue().splitlines() == ["preprocess: 4/4 clip (100%), 0.50 clip/s, ETA 0 s"]


def test_readme_says_what_json_confidence_an_abstention_has(tmp_path, capsys):
    """Before: README said an abstention is "null and its reason, no confidence", but ``--json`` keeps a number in
    ``av_confidence`` beside ``av_offset_ms: null`` (the best lag's match strength, as ``measure --help`` says).
    Oracle: a clip the test made with no flash or beep (a test pattern and a steady tone): the A/V estimate abstains."""
    clip = tmp_path / "tone.mp4"
    tiny_clip(clip, 1.0, fps=10, sample_rate=16000)
    assert main(["measure", str(clip), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["av_offset_ms"] is None and record["av_abstain"]["reason"] and record["av_abstain"]["hint"]
    assert isinstance(record["av_confidence"], float)  # a figure, not null
    readme = (REPO / "README.md").read_text()
    assert "null and its reason, no confidence" not in readme
    assert "--json keeps the estimator's figure" in readme and "in av_confidence / text_confidence: not a confidence" in readme


# ---------------------------------------------------------------- 8. report on a media directory: said once, with hints

CP1252_SRT = b"1\r\n00:00:00,200 --> 00:00:00,900\r\nCaf\xe9 cr\xe8me\r\n"


def test_report_on_a_directory_warns_once_per_file_and_hints_as_preprocess_does(tmp_path, caplog):
    """Before: ``avalign report clips/`` said a cp1252 transcript's warning twice (measured, then read again for the
    word count), three times with its clip page; a yt-dlp ``talk.en.vtt`` beside ``talk.mp4`` was skipped with no hint
    (``preprocess`` names the file to rename it to) and a ``KEY.ass`` sidecar was "not media or a transcript: .ass"
    with no way on. Oracle: the files the test wrote (their names, the cp1252 byte at offset 37)."""
    clips = tmp_path / "clips"
    clips.mkdir()
    tiny_clip(clips / "dvd.mp4", 1.0, fps=10, sample_rate=16000)
    (clips / "dvd.srt").write_bytes(CP1252_SRT)
    tiny_clip(clips / "talk.mp4", 1.0, fps=10, sample_rate=16000)
    (clips / "talk.en.vtt").write_text(VTT)
    tiny_clip(clips / "anime.mp4", 1.0, fps=10, sample_rate=16000)
    (clips / "anime.ass").write_text(ASS)
    with caplog.at_level(logging.WARNING):
        # --fail-over-ms 0: every answered clip is flagged and gets a page (the third read of dvd.srt)
        main(["report", str(clips), "--out", str(tmp_path / "rep"), "--fail-over-ms", "0", "--no-progress"])
    cp1252 = [r.getMessage() for r in caplog.records if "not UTF-8" in r.getMessage()]
    assert len(cp1252) == 1 and cp1252[0].startswith(f"{clips / 'dvd.srt'}: not UTF-8 (byte 37 is b'\\xe9')"), cp1252
    skipped = {s["key"]: s for s in json.loads((tmp_path / "rep" / "report.json").read_text())["skipped"]}
    assert "talk.en.vtt" not in skipped  # since user66: talk.mp4's transcript (tests/test_cli_user_round66.py)
    assert skipped["anime.ass"]["reason"] == "unknown_extension"
    assert skipped["anime.ass"]["message"] == ("not media or a transcript: .ass; ASS/SSA subtitles are not read as "
                                              "transcripts: convert it to SRT beside its media (`ffmpeg -i anime.ass "
                                              "anime.srt`)")


# ---------------------------------------------------------------- 9. preprocess --timeout below 0


def test_preprocess_refuses_a_negative_timeout(tmp_path, capsys):
    """Before: ``avalign preprocess raw/ out/ --timeout -1`` ran with no time limit at all (``--timeout`` > 0 was the
    limit, anything else none), without a word; the help says 0 means none. Oracle: the value the test passed; no
    output directory is made."""
    clips = tmp_path / "clips"
    clips.mkdir()
    tiny_clip(clips / "a.mp4", 1.0, fps=10, sample_rate=16000)
    with pytest.raises(SystemExit) as exited:
        main(["preprocess", str(clips), str(tmp_path / "out"), "--timeout", "-1", "--no-progress"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == \
        "avalign preprocess: error: argument --timeout: '-1' is not >= 0 (seconds; 0: no limit)"
    assert not (tmp_path / "out").exists()
    assert main(["preprocess", str(clips), str(tmp_path / "out"), "--timeout", "0", "--dry-run", "--no-progress"]) == 0


# ---------------------------------------------------------------- 10. aligner.align given a path or swapped clips


def test_align_given_a_transcript_path_or_swapped_clips_says_what_to_pass():
    """Before: ``aligner.align(video, audio, "clip01.srt")`` (README's call, with the path instead of
    ``read_transcript``'s record) raised ``AttributeError: 'str' object has no attribute 'spans'``, and
    ``align(audio, video)`` ``AttributeError: 'AudioClip' object has no attribute 'num_frames'``. Oracle: the
    sample clip and transcript README reads; what the right call gives is unchanged (README: -82.6 ms, frame 10)."""
    import aligner
    import loaders

    media, srt = str(SAMPLE / "clip01.mkv"), str(SAMPLE / "clip01.srt")
    video, audio = loaders.read_video(media), loaders.read_audio(media)
    with pytest.raises(TypeError) as info:
        aligner.align(video, audio, srt)
    assert str(info.value) == (f"transcript must be a Transcript (loaders.read_transcript(path)) or None, got str "
                               f"{srt!r}; read it first: loaders.read_transcript({srt!r})")
    with pytest.raises(TypeError, match=r"^video must be a VideoClip \(loaders\.read_video\(path\)\) or None, got "
                                        r"AudioClip .*; video and audio are swapped: align\(video, audio, …\)$"):
        aligner.align(audio, video)
    with pytest.raises(TypeError, match=r"^audio must be an AudioClip \(loaders\.read_audio\(path\)\), got str "):
        aligner.align(video, media)
    sample = aligner.align(video, audio, loaders.read_transcript(srt), sample_rate=16000)
    assert (round(sample.report.av_offset_ms, 1), sample.segments[0].frame_start) == (-82.6, 10)


# ---------------------------------------------------------------- 11. bench decode on a user's short clip


def test_bench_decode_on_a_short_clip_says_what_the_sparse_case_needs(tmp_path, capsys):
    """Before: ``avalign bench decode clip.mp4`` on an 8 s clip ran the full-decode case, then failed with
    ``clip.mp4: window [10.000000, 18.000000) s is outside the video``: nothing says the one file is also the sparse
    case's, or that that case reads from 10 s. Oracle: the 2 s clip the test made (its frames at 10 fps)."""
    clip = tmp_path / "short.mp4"
    tiny_clip(clip, 2.0, fps=10, sample_rate=None)
    assert main(["bench", "decode", str(clip), "--repeats", "1", "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["message"] == (
        f"{clip}: its video covers [0.000, 2.000) s, and the sparse case reads 8 frames at 1 fps from 10 s; hint: give a "
        "clip longer than 10 s (all 8 frames: 18 s) as SPARSE_FILE (the second file; one file is used for both), or no "
        "file for the generated clips"), error


# ---------------------------------------------------------------- 12. a window from past the end, with no stop


@pytest.mark.parametrize("backend", ["pyav", "torchcodec", "decord"])
def test_a_window_starting_past_the_end_is_outside_as_with_a_stop(backend):
    """Before: ``read_video(p, start_seconds=100)`` on a 6.5 s clip returned an empty clip (``pts_seconds=[nan ..
    nan]``) and ``read_audio`` a 0-sample clip "starting" at 6.5005 s, while ``start_seconds=100, stop_seconds=101``
    raised ``IndexError`` as documented ("the window lies entirely outside the stream"). A window open at its end now
    follows the same rule. Oracle: ffprobe's frame times of the sample clip (``clip01.frames.json``)."""
    import loaders

    if backend == "decord":
        pytest.importorskip("decord")
    media = str(SAMPLE / "clip01.mkv")
    pts = [float(f["pts_time"]) for f in json.loads((SAMPLE / "clip01.frames.json").read_text())["frames"]]
    with pytest.raises(IndexError) as info:
        loaders.read_video(media, start_seconds=100, backend=backend)
    said = re.fullmatch(re.escape(f"{media}: window [100.000000, inf) s is outside the video, which covers "
                                  f"[{pts[0]:.6f}, ") + r"([\d.]+)\) s", str(info.value))
    assert said is not None and pts[-1] < float(said.group(1)) < pts[-1] + 0.1, str(info.value)
    clip = loaders.read_video(media, start_seconds=3.0, backend=backend)  # inside: the frames from 3 s to the end
    assert clip.pts_seconds.tolist() == pytest.approx([t for t in pts if t >= 3.0], abs=5e-7)
    if backend == "pyav":
        with pytest.raises(IndexError, match=r"window \[100\.000000, inf\) s is outside the audio, which covers "
                                             r"\[0\.000000, 6\.5\d*\) s"):  # 6.5 s of 48 kHz Opus from 0
            loaders.read_audio(media, start_seconds=100)
        audio = loaders.read_audio(media, start_seconds=6.0)
        assert audio.start_seconds == 6.0 and 0.5 * 48000 <= audio.num_samples <= 0.502 * 48000
