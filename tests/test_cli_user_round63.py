"""A user's defects (round 63): each test writes what the user had (a shard with its ASR output under its own name,
transcripts in the formats a user guesses, a shard given to ``measure``, a set of clips without transcripts) and
checks what avalign says about them against what the test wrote."""
from __future__ import annotations

import json
import logging

import pytest

from avalign.cli import main
from tests.conftest import REPO, tiny_clip, write_tar

SAMPLE = REPO / "sample_data"

WHISPERX = json.dumps({"segments": [{"start": 0.1, "end": 0.9, "text": " Hello there.", "words": [
    {"word": "Hello", "start": 0.1, "end": 0.4}, {"word": "there.", "start": 0.45, "end": 0.9}]}]}).encode()
SRT = b"1\n00:00:00,100 --> 00:00:00,900\nHello there.\n"


# ---------------------------------------------------------------- 1. a transcript member under its tool's name


def test_a_transcript_member_under_another_name_is_said_not_read(tmp_path, caplog):
    """Before: a shard whose ASR output is ``KEY.whisperx.json`` (or ``KEY.whisper.srt``, as ``measure --help``'s own
    ``talk.whisperx.json`` suggests naming it) gave batches with no text and said nothing: ``stats`` counted no skip,
    no member was dropped, and ``preprocess`` listed the member among those that are "not media, transcripts or
    captions". A directory's ``talk.whisperx.json`` already got a rename hint. Oracle: the members the test wrote; a
    record (``KEY.info.json``, ``KEY.align.json``) is not reported; names no other test uses (once per process)."""
    from loaders import make_loader
    from loaders.transcripts import pick_transcript

    clip = tmp_path / "clip.mp4"
    media = tiny_clip(clip, 1.0, fps=10, sample_rate=16000)
    shard = write_tar(tmp_path / "asr-000000.tar", [("u1.mp4", media), ("u1.whisperx.json", WHISPERX)])
    with caplog.at_level(logging.WARNING, logger="loaders"):
        batches = list(make_loader(str(shard), seed=0, budgets=(300, 160_000, 512)))
    assert [b.sample_keys for b in batches] == [("u1",)] and batches[0].num_words == 0  # still not read: said so
    said = [r.getMessage() for r in caplog.records if "under a name that is not read" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith(f"{shard}:u1: KEY.whisperx.json holds a transcript"), said
    assert said[0].endswith("rename it to KEY.json when writing the shards"), said[0]

    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="loaders"):
        sample = {"__key__": "u2", "__url__": "s.tar", "mp4": b"", "whisper.srt": SRT}
        assert pick_transcript(sample, sample.__getitem__) is None
        records = {"__key__": "u3", "mp4": b"", "info.json": WHISPERX, "align.json": WHISPERX, "asr7.json": b"{}"}
        assert pick_transcript(records, records.__getitem__) is None  # records, and JSON that is no transcript
    said = [r.getMessage() for r in caplog.records if "under a name that is not read" in r.getMessage()]
    assert said == [said[0]] and said[0].startswith("s.tar:u2: KEY.whisper.srt holds a transcript"), said
    assert said[0].endswith("rename it to KEY.srt when writing the shards"), said[0]

    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="avalign"):
        assert main(["preprocess", str(shard), str(tmp_path / "out"), "--dry-run", "--no-progress"]) == 0
    said = [r.getMessage() for r in caplog.records if "not written to the output" in r.getMessage()]
    assert len(said) == 1 and said[0].endswith(
        "if .whisperx.json holds the samples' transcript, name it KEY.json in the input shards"), said


# ---------------------------------------------------------------- 2. transcripts in a format a user guesses


@pytest.mark.parametrize("name, content, expected", [
    ("talk.tsv", "start\tend\ttext\n100\t900\tHello there.\n",
     "hint: this is openai-whisper's TSV output, which is not read: read the .srt, .vtt or .json"),
    ("talk.txt", "Hello there. General Kenobi.\n",
     "hint: it holds no time stamps (plain text?): a transcript needs times; for text without times, make it one SRT cue"),
    ("talk.lrc", "[00:00.10]Hello there.\n[00:01.00]General Kenobi.\n",
     "convert it with `ffmpeg -i {path} OUT.srt` and read OUT.srt"),
    ("talk.sbv", "0:00:00.100,0:00:00.900\nHello there.\n",
     "convert it with `ffmpeg -i {path} OUT.srt` and read OUT.srt"),
    ("talk.ttml", '<?xml version="1.0"?><tt xmlns="http://www.w3.org/ns/ttml"><body><div><p begin="00:00:00.100" '
                  'end="00:00:00.900">Hello there.</p></div></body></tt>',
     "hint: XML subtitles (TTML / DFXP) are not read, and FFmpeg does not read them: get WebVTT or SRT"),
    ("000000000.json", json.dumps({"url": "https://example.com/v.mp4", "key": "000000000", "status": "success",
                                   "caption": "a dog runs on a beach", "duration": 6.0}),
     "it is a clip's metadata with a 'caption' (video2dataset's KEY.json: ['caption', 'duration', 'key', 'status', "
     "'url']), not a timed transcript; hint: a caption has no times"),
])
def test_a_transcript_in_a_format_not_read_gets_a_hint_that_works(tmp_path, capsys, name, content, expected):
    """Before: every file whose format was not told was answered "pass --transcript-format, one of ['srt', …]",
    which no format makes work for Whisper's TSV, plain text or TTML; an LRC file (``[00:00.10]Hello``) was read
    as JSON and refused as ``line 1 column 3: invalid JSON``; video2dataset's metadata ``KEY.json`` given as the
    transcript got "segments: missing" with no word that it is metadata. Oracle: the file the test wrote; for the two
    formats FFmpeg reads, the hint's command converts it, and the result is read with the test's times."""
    from loaders import read_transcript
    from tests.conftest import ffmpeg

    path = tmp_path / name
    path.write_text(content)
    assert main(["measure", str(SAMPLE / "clip00.mp4"), "--transcript", str(path), "--json"]) == 2
    document = json.loads(capsys.readouterr().out)["error"]
    assert document["file"] == str(path) and document["reason"] == "transcript"
    assert "invalid JSON" not in document["message"]
    assert expected.format(path=path) in document["message"], document["message"]
    if "ffmpeg -i" in expected:  # the hint works: the converted file holds the cue the test wrote
        ffmpeg("-i", str(path), str(tmp_path / "OUT.srt"))
        spans = read_transcript(tmp_path / "OUT.srt").spans
        assert spans[0].text == "Hello there." and spans[0].start_seconds == pytest.approx(0.1)


def test_a_plain_text_transcript_made_one_cue_as_the_hint_says_gets_its_words(tmp_path):
    """The plain-text hint works: the text as one SRT cue over sample_data/clip00.mp4 (6 s) gets its words placed by
    forced alignment inside the media. Oracle: the transcript's own words and the clip's length."""
    from loaders import read_transcript

    truth = read_transcript(SAMPLE / "clip00.json")
    text = " ".join(span.text for span in truth.spans)
    (tmp_path / "one.srt").write_text(f"1\n00:00:00,000 --> 00:00:06,000\n{text}\n")
    out = tmp_path / "m.json"
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(["measure", str(SAMPLE / "clip00.mp4"), "--transcript", str(tmp_path / "one.srt"), "--json"]) == 0
    out.write_text(buffer.getvalue())
    record = json.loads(out.read_text())
    words = [w["text"] for w in record["words"]]
    assert words == [w.text.strip(".,!?") for span in truth.spans for w in span.words], words
    assert all(0.0 <= w["start_seconds"] < w["stop_seconds"] <= 6.0 for w in record["words"])


# ---------------------------------------------------------------- 3. measure given a shard


def test_measure_given_a_shard_says_it_is_a_shard_and_names_that_file(tmp_path, capsys):
    """Before: ``avalign measure shard-000000.tar`` said ``cannot open …: Invalid data found when processing input;
    hint: … another kind of file with a media extension?`` (a .tar has none), and ``--transcript`` given a shard or a
    directory got a ``--json`` error whose ``file`` was the media, not the file refused. Oracle: the paths given."""
    from avalign.cli import SHARD_SUFFIXES
    from avcore import SHARD_SUFFIXES as LIBRARY_SHARD_SUFFIXES

    assert SHARD_SUFFIXES == LIBRARY_SHARD_SUFFIXES  # the CLI's copy (no torch before parsing) mirrors the library
    shard = str(SAMPLE / "shards" / "shard-000000.tar")
    assert main(["measure", shard, "--json"]) == 2
    document = json.loads(capsys.readouterr().out)["error"]
    assert document["file"] == shard and document["reason"] == "invalid"
    assert document["message"].startswith(f"media file {shard!r} is a WebDataset shard (a tar of samples), not one "
                                          "media file; hint:"), document["message"]
    assert "`avalign report INPUT --out DIR`" in document["message"]
    media = str(SAMPLE / "clip00.mp4")
    for transcript in (shard, str(tmp_path)):
        assert main(["measure", media, "--transcript", transcript, "--json"]) == 2
        document = json.loads(capsys.readouterr().out)["error"]
        assert document["file"] == transcript, document
        assert document["message"].startswith(f"transcript {transcript!r} is a"), document["message"]


# ---------------------------------------------------------------- 4. report on clips without transcripts


def test_report_on_clips_without_transcripts_says_so_not_zero_abstained(tmp_path, capsys):
    """Before: ``avalign report`` of video2dataset clips (a ``KEY.txt`` caption, no transcript) printed ``text offset
    none answered (0 abstained)`` and its histogram said ``none answered: all 0 abstained``. Oracle: the shard the
    test wrote holds two clips and no transcript."""
    clip = tmp_path / "clip.mp4"
    media = tiny_clip(clip, 1.0, fps=10, sample_rate=16000)
    shard = write_tar(tmp_path / "v2d-000000.tar", [("000000000.mp4", media), ("000000000.txt", b"a test pattern"),
                                                    ("000000001.mp4", media), ("000000001.txt", b"a test pattern")])
    assert main(["report", str(shard), "--out", str(tmp_path / "rep"), "--clip-pages", "0", "--no-progress"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "text offset none: no clip has a transcript   (> 0: stamps late)" in lines, lines
    assert "clips       2 reported, 0 skipped" in lines


# ---------------------------------------------------------------- 5. benchmarks say where they are


def test_bench_decode_says_each_case_as_it_runs(tmp_path, caplog, capsys):
    """Before: ``avalign bench decode`` printed nothing for a minute at ``--repeats 1`` (its default 5: minutes) and
    ``avalign bench align`` nothing for more than 5 minutes at ``--num-clips 2`` (its wild sets are generated first):
    their progress lines were INFO, shown only with ``-v``. Each stage now says itself on stderr, before the tables on
    stdout. Oracle: the files the test gave, the tools of each table and the repeats asked for."""
    full = tmp_path / "full.mp4"
    tiny_clip(full, 2.0, fps=10, sample_rate=16000)
    sparse = tmp_path / "sparse.mp4"
    tiny_clip(sparse, 18.0, fps=10, sample_rate=16000)
    assert main(["bench", "decode", str(full), str(sparse), "--repeats", "1", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    said = [r.getMessage() for r in caplog.records if r.name.startswith("avalign.bench")
            and r.levelno == logging.INFO]
    expected = [f"bench decode: (a) full decode of full.mp4: {row['tool']} [{n}/{len(result['full'])}], 1 run(s)"
                for n, row in enumerate(result["full"], start=1)]
    expected += [f"bench decode: (b) 8 frames at 1 fps from 10 s of sparse.mp4: {row['tool']} "
                 f"[{n}/{len(result['sparse'])}], 1 run(s)" for n, row in enumerate(result["sparse"], start=1)]
    expected += [f"bench decode: (c) decoder creation: {len(result['creation'])} tool(s), 1 run(s) each"]
    assert said == expected, said


# ---------------------------------------------------------------- 6. resume, then set_epoch at the top of the loop


@pytest.mark.parametrize("build", ["make_loader", "make_dataset"])
def test_set_epoch_of_the_restored_epoch_keeps_the_restored_position(build, caplog):
    """Before: the usual training loop after a restore, ``loader.load_state_dict(ckpt); for epoch in
    range(ckpt_epoch, n): loader.set_epoch(epoch)``, read the restored epoch again from its start, silently: the
    batches before the checkpoint were trained on twice (``set_epoch`` then ``load_state_dict`` resumed; the
    other way round did not). Another epoch after a mid-epoch state drops its rest without a word. Oracle: the
    uninterrupted run's batches after the checkpoint."""
    import loaders

    urls = str(SAMPLE / "shards" / "shard-{000000..000001}.tar")

    def make():
        return getattr(loaders, build)(urls, seed=0, budgets=(240, 128_000, 64), window_seconds=2.0)

    loader = make()
    batches = iter(loader)
    before = [next(batches).sample_keys for _ in range(2)]
    state = loader.state_dict()
    rest = [b.sample_keys for b in batches]
    assert rest and not set(sum(before, ())) & set(sum(rest, ()))

    resumed = make()
    resumed.load_state_dict(state)
    resumed.set_epoch(0)  # the top of the training loop, at the checkpoint's epoch
    assert [b.sample_keys for b in resumed] == rest

    moved_on = make()
    moved_on.load_state_dict(state)
    with caplog.at_level(logging.WARNING, logger="loaders"):
        moved_on.set_epoch(1)
    said = [r.getMessage() for r in caplog.records if "after a loader state saved in the middle" in r.getMessage()]
    assert said == ["set_epoch(1) after a loader state saved in the middle of epoch 0 was loaded: epoch 1 starts "
                    "afresh (the rest of epoch 0 is not read); hint: set_epoch(0) keeps the restored position"], said
    epoch1 = [k for b in moved_on for k in b.sample_keys]
    assert sorted(epoch1) == sorted(sum(before, ()) + sum(rest, ()))  # a whole epoch: every window once


def test_read_video_of_a_shard_says_it_is_a_tar(tmp_path):
    """Before: ``loaders.read_video("shard-000000.tar")`` (and ``read_audio``, and a tar's bytes) said ``Invalid data
    found when processing input; hint: … another kind of file with a media extension?``. Oracle: the sample shard, a
    tar, and a copy of it named ``.mp4``."""
    import loaders
    from loaders.errors import DecodeError

    shard = SAMPLE / "shards" / "shard-000000.tar"
    renamed = tmp_path / "clip.mp4"
    renamed.write_bytes(shard.read_bytes())
    for read, source in ((loaders.read_video, str(shard)), (loaders.read_audio, str(shard)),
                         (loaders.read_video, shard.read_bytes()), (loaders.read_video, str(renamed))):
        with pytest.raises(DecodeError, match=r"it is a tar archive \(a WebDataset shard\?\), not audio or video; "
                                              r"hint: read a shard's samples with loaders\.make_loader") as caught:
            read(source)
        assert caught.value.reason == "decode"


# ---------------------------------------------------------------- 7. word-level JSON with no segments


@pytest.mark.parametrize("words_key", ["words", "word_segments"])
def test_words_without_segments_are_grouped_into_sentences(words_key, caplog):
    """Before: OpenAI's ``verbose_json`` with ``timestamp_granularities=["word"]`` (``{"text", "words"}``, no
    ``segments``) and WhisperX's ``word_segments`` alone made each word a segment of its own (a caption-level consumer,
    ``segment_texts``, saw "Mr." as a caption; the loader's segment rows filled a word at a time) and logged a
    WARNING that the words "lie in no span", for ordinary output. The pipeline's word chunks and whisper.cpp ``-ml 1``
    were already grouped into sentences. Oracle: the words and sentences the test wrote."""
    from loaders import read_transcript

    words = [("Mr.", 0.5, 0.8, 0.9), ("Smith", 0.8, 1.2, 0.8), ("sat.", 1.2, 1.6, 0.7),
             ("Then", 2.0, 2.3, 0.9), ("he", 2.3, 2.5, 0.9), ("left.", 2.5, 3.0, 0.6)]
    doc = {"text": "Mr. Smith sat. Then he left.",
           words_key: [{"word": w, "start": a, "end": b, "score": p} for w, a, b, p in words]}
    with caplog.at_level(logging.WARNING, logger="loaders"):
        spans = read_transcript(json.dumps(doc).encode(), name="talk.json").spans
    assert [(s.text, s.start_seconds, s.stop_seconds) for s in spans] == [("Mr. Smith sat.", 0.5, 1.6),
                                                                          ("Then he left.", 2.0, 3.0)]
    assert [[(w.text, w.start_seconds, w.stop_seconds, w.score) for w in s.words] for s in spans] == [
        [w for w in words[:3]], [w for w in words[3:]]]
    assert not [r for r in caplog.records if "lie in no span" in r.getMessage()]


# ---------------------------------------------------------------- 8. an A/V abstention at the search edge


def test_an_av_abstention_at_the_search_edge_names_a_lag_at_the_edge(tmp_path, capsys):
    """Before: ``measure`` of a 120 s test pattern over a steady tone said ``found best lag -412 ms at the edge;
    needed a peak inside ±500 ms``: -412 ms is inside ±500 ms. The search runs over lags at the visual events'
    centre; -412 ms was the offset at video time 0 after the cell's drift. The lag at the edge is now said as it was
    searched, with the offset at time 0 beside it. Oracle: the search range asked for (±500 ms), the clip's
    visual events (testsrc's counter, every second over the whole 120 s: centre near 60 s), and the clock model
    (offset at 0 = lag − drift · centre). The estimator's answer is unchanged (``best_guess_ms``)."""
    import re

    from tests.conftest import ffmpeg

    clip = tmp_path / "pattern.mp4"
    ffmpeg("-f", "lavfi", "-i", "testsrc=size=320x240:rate=30", "-f", "lavfi", "-i", "sine=f=440:r=44100", "-t", "120",
           "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", str(clip))
    assert main(["measure", str(clip), "--json"]) == 0
    abstain = json.loads(capsys.readouterr().out)["av_abstain"]
    if abstain is None or abstain["reason"] != "peak_at_search_edge":
        pytest.skip(f"this FFmpeg's pattern did not end at the search edge: {abstain}")
    found = re.fullmatch(r"best lag ([+-]\d+) ms at the edge of the ±500 ms search(?: \(at the visual events' centre, "
                         r"([\d.]+) s; with its drift of ([+-]\d+) ppm, ([+-]\d+) ms at video time 0\))?",
                         abstain["found"])
    assert found is not None, abstain["found"]
    lag_ms = int(found.group(1))
    assert 490 <= abs(lag_ms) <= 500  # at the edge of what was searched (two 5 ms steps from it at most)
    if found.group(2) is not None:
        centre, drift_ppm, at_zero = float(found.group(2)), int(found.group(3)), int(found.group(4))
        assert 50.0 < centre < 70.0
        assert at_zero == pytest.approx(lag_ms - drift_ppm * 1e-6 * centre * 1000.0, abs=2.0)
        assert at_zero == pytest.approx(abstain["best_guess_ms"], abs=30.0)


# ---------------------------------------------------------------- 9. option errors name the option


@pytest.mark.parametrize("command, option, value, expected", [
    ("preprocess", "--workers", "0", "argument --workers: '0' is not > 0"),
    ("preprocess", "--samples-per-shard", "0", "argument --samples-per-shard: '0' is not > 0"),
    ("preprocess", "--max-duration", "-1", "argument --max-duration: '-1' is not > 0 (seconds)"),
    ("preprocess", "--max-pixels", "0", "argument --max-pixels: '0' is not > 0"),
    ("report", "--sample-rate", "0", "argument --sample-rate: '0' is not > 0"),
])
def test_a_bad_option_value_is_refused_by_its_flag(tmp_path, capsys, command, option, value, expected):
    """Before: ``avalign preprocess raw/ out/ --max-duration -1`` said ``max_duration_seconds must be > 0 or None, got
    max_duration_seconds = -1.0`` (and ``workers = 0``, ``max_pixels = 0``): the library's parameter names, not the
    flags typed; ``measure --sample-rate 0`` already named its flag. Oracle: the flag and value the test passed."""
    clips = tmp_path / "clips"
    clips.mkdir()
    tiny_clip(clips / "a.mp4", 1.0, fps=10, sample_rate=16000)
    out = ["--out", str(tmp_path / "rep")] if command == "report" else [str(tmp_path / "out")]
    with pytest.raises(SystemExit) as exited:
        main([command, str(clips), *out, option, value, "--no-progress"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"avalign {command}: error: {expected}"


def test_preprocess_given_reports_out_option_says_where_the_output_goes(tmp_path, capsys):
    """Before: ``avalign preprocess raw/ --out out/`` (``report``'s way of naming the output) printed the top-level
    usage and ``avalign: error: unrecognized arguments: --out``: not which command, nor that OUTPUT_DIR is positional.
    Oracle: the directory the test passed; nothing is written."""
    clips = tmp_path / "clips"
    clips.mkdir()
    out = tmp_path / "out"
    for argv in (["preprocess", str(clips), "--out", str(out)], ["preprocess", str(clips), f"--out={out}"]):
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == 2
        assert capsys.readouterr().err.splitlines()[-1] == (
            f"avalign preprocess: hint: the output directory is preprocess's second argument, not an option: "
            f"`avalign preprocess INPUT {out}` (`avalign report INPUT --out DIR` is the one with --out)")
    assert not out.exists()


def test_preprocess_help_gives_the_manifests_units(capsys):
    """Before: ``preprocess --help`` listed manifest.jsonl's ``duration`` and ``num_samples`` with no unit, while
    ``--json``'s ``num_samples`` counts clips (sample_data's clip00 has the manifest line ``"duration":6.0,
    "num_samples":96000``: 6 s of 16 kHz indices, and a run over it prints ``"num_samples": 1``). Oracle: the help
    text, which now gives both units."""
    with pytest.raises(SystemExit):
        main(["preprocess", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert ("manifest.jsonl (key, shard, duration: seconds, num_frames, num_samples: audio samples at --sample-rate "
            "(0: no audio; --json's num_samples counts the samples written, clips)") in text, text


def test_demo_says_each_clip_as_it_goes(caplog, capsys):
    """Before: ``avalign demo`` (what ``make demo`` runs first) printed nothing for 20-35 s on this machine, then
    everything at once. It now says each clip as it is decoded and aligned, and the loader stage, on stderr (stdout
    keeps the summary). Oracle: the clips the summary lists, in its order."""
    assert main(["demo", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    said = [r.getMessage() for r in caplog.records if r.name == "avalign._demo" and r.levelno == logging.INFO]
    assert said[0].startswith(f"demo: decoding and aligning the samples of {summary['shards']} shard(s) in ")
    assert [m.split()[1] for m in said[1:-1]] == [clip["key"] for clip in summary["clips"]], said
    assert said[-1] == f"demo: make_loader over the {summary['shards']} shard(s) (2 s windows, fixed-capacity batches)"
