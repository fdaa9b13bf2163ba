"""A fresh user's round (user68) on video2dataset-style shards: a video-only ``KEY.mp4`` with its audio in ``KEY.wav``
/ ``KEY.m4a`` beside it (video2dataset's ``encode_formats={"video": "mp4", "audio": "m4a"}``), and WhisperX transcripts.
Oracles: sample_data's truth (the generator's transcript offsets) and the files the tests write."""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil

from avalign.cli import main
from tests.conftest import SAMPLE_DATA, ffmpeg


def _video2dataset_split(d, key="000042"):
    """sample_data's clip00 (H.264 + AAC in MP4, WhisperX-style word JSON, transcript 180 ms late) as video2dataset
    writes a sample with its audio apart: ``KEY.mp4`` with no audio stream, ``KEY.m4a``, ``KEY.json``."""
    d.mkdir(exist_ok=True)
    ffmpeg("-i", str(SAMPLE_DATA / "clip00.mp4"), "-map", "0:v", "-c", "copy", str(d / f"{key}.mp4"))
    ffmpeg("-i", str(SAMPLE_DATA / "clip00.mp4"), "-map", "0:a", "-c", "copy", str(d / f"{key}.m4a"))
    shutil.copy(SAMPLE_DATA / "clip00.json", d / f"{key}.json")
    return d / f"{key}.mp4", d / f"{key}.m4a", d / f"{key}.json"


def test_measure_reads_a_video_only_clips_audio_file_and_names_it_when_not_given(tmp_path, capsys):
    """Before: `avalign measure KEY.mp4` of a video-only clip said "no audio stream ... nothing to do unless the audio
    is in another file", with no way to give that file (no option), and did not name the KEY.m4a beside it, which
    preprocess, report and the loader read as the clip's audio. Now `--audio FILE` reads it and, without it, a note
    names the file and the command; the command, pasted, measures the truth's offset."""
    truth = json.loads((SAMPLE_DATA / "truth.json").read_text())["clips"]["clip00"]["text_offset_ms"]
    video, audio, transcript = _video2dataset_split(tmp_path / "clips")
    assert main(["measure", str(video), "--transcript", str(transcript), "--json"]) == 0
    out, err = capsys.readouterr()
    bare = json.loads(out)
    assert bare["text_offset_ms"] is None and bare["audio"]["sample_rate"] is None
    (note,) = [line for line in err.splitlines() if "avalign measure: note:" in line]
    assert str(audio) in note and "no audio stream" in note
    command = shlex.split(re.search(r"`([^`]*)`", note).group(1))
    assert command[:2] == ["avalign", "measure"] and command[command.index("--audio") + 1] == str(audio)
    assert main(command[1:] + ["--json"]) == 0
    out, err = capsys.readouterr()
    record = json.loads(out)
    assert abs(record["text_offset_ms"] - truth) <= 10.0, record["text_offset_ms"]
    (stream,) = [s for s in json.loads((SAMPLE_DATA / "clip00.streams.json").read_text())["streams"]
                 if s["codec_type"] == "audio"]  # ffprobe's record of the audio the .m4a carries
    assert record["audio"]["sample_rate"] == int(stream["sample_rate"])
    assert record["words"] and all(w["sample_start"] is not None for w in record["words"])
    assert "note:" not in err
    # the same clip through preprocess (which pairs KEY.m4a with KEY.mp4) gives the same offset
    assert main(["preprocess", str(tmp_path / "clips"), str(tmp_path / "out"), "--no-progress"]) == 0
    capsys.readouterr()
    import tarfile

    with tarfile.open(tmp_path / "out" / "shard-000000.tar") as tar:
        align = json.load(tar.extractfile("000042.align.json"))
    assert align["text_offset_ms"] == record["text_offset_ms"]


def test_measure_says_when_audio_is_not_read_because_the_media_has_its_own(tmp_path, capsys):
    video, audio, transcript = _video2dataset_split(tmp_path)
    assert main(["measure", str(SAMPLE_DATA / "clip00.mp4"), "--transcript", str(transcript), "--audio",
                 str(audio)]) == 0
    err = capsys.readouterr().err
    assert f"--audio {audio} is not read" in err and "has an audio stream of its own" in err


def test_preprocess_says_video2dataset_audio_members_at_info_not_a_warning_per_sample(tmp_path, caplog):
    """Before: every sample of video2dataset's layout with its audio apart (KEY.mp4 + KEY.m4a) logged a WARNING
    "several media for key ..." in `avalign preprocess` (one per sample: a million on a million clips), though the
    m4a is read as documented and the loader and report read the same shards without a word. Now it is INFO; a media
    left out of the output (KEY.mp4 + KEY.mkv) is still a WARNING and a duplicate_key skip."""
    import logging

    from avalign.preprocess import list_inputs

    _video2dataset_split(tmp_path / "clips")
    with caplog.at_level(logging.INFO, logger="avalign"):
        plan = list_inputs(str(tmp_path / "clips"))
    (sample,) = plan.samples
    assert sample.media_ext == "mp4" and [ext for ext, _ in sample.extras if ext == "m4a"] == ["m4a"]
    said = [r for r in caplog.records if "several media" in r.getMessage()]
    assert [r.levelno for r in said] == [logging.INFO] and plan.skipped == ()
    caplog.clear()
    shutil.copy(SAMPLE_DATA / "clip01.mkv", tmp_path / "clips" / "000042.mkv")
    with caplog.at_level(logging.INFO, logger="avalign"):
        plan = list_inputs(str(tmp_path / "clips"))
    said = [r for r in caplog.records if "several media" in r.getMessage()]
    assert [r.levelno for r in said] == [logging.WARNING]
    assert [(s["key"], s["reason"]) for s in plan.skipped] == [("000042", "duplicate_key")]


def test_report_of_a_directory_reads_a_video_only_clips_audio_file_as_preprocess_does(tmp_path, capsys):
    """Before: `avalign report DIR` of video2dataset's files with the audio apart (KEY.m4a, KEY.mp4, KEY.json,
    KEY.txt) reported the m4a as an audio-only clip (it sorts first), skipped the mp4 as duplicate_key, and counted
    the caption KEY.txt as an unknown_extension skip ("1 reported, 2 skipped"; with KEY.wav instead: the mp4 measured
    without audio, text offset null), while `preprocess DIR` and report of the same files in a shard measured the mp4
    with the m4a's audio. Now report pairs them as preprocess does: one clip, with video, no skip, the truth's offset
    and preprocess's figure."""
    truth = json.loads((SAMPLE_DATA / "truth.json").read_text())["clips"]["clip00"]["text_offset_ms"]
    clips = tmp_path / "clips"
    _video2dataset_split(clips)
    (clips / "000042.txt").write_text("a person speaks\n")
    assert main(["preprocess", str(clips), str(tmp_path / "out"), "--no-progress"]) == 0
    assert main(["report", str(clips), "--out", str(tmp_path / "rep"), "--no-progress", "--clip-pages", "0"]) == 0
    capsys.readouterr()
    report = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert report["skipped"] == []
    (clip,) = report["clips"]
    assert clip["key"] == "000042" and clip["has_video"] and clip["has_transcript"]
    assert abs(clip["text_offset_ms"] - truth) <= 10.0, clip["text_offset_ms"]
    preprocessed = json.loads((tmp_path / "out" / "manifest.jsonl").read_text().splitlines()[0])
    import tarfile

    with tarfile.open(tmp_path / "out" / preprocessed["shard"]) as tar:
        align = json.load(tar.extractfile("000042.align.json"))
    assert clip["text_offset_ms"] == align["text_offset_ms"] and clip["num_words"] == preprocessed["num_words"]


def test_a_flagged_clip_page_draws_the_audio_of_the_samples_audio_member(tmp_path, capsys):
    """Before: the page of a flagged clip whose audio is a separate member (video2dataset's KEY.mp4 + KEY.m4a in a
    shard) said "video-only media: no audio, no waveform" and drew an empty waveform, though the report had measured
    its transcript offset on that audio (the page decoded KEY.mp4 alone). Now the page decodes the clip as the
    measurement did: the waveform is drawn (the report's own waveform colour, COLOURS) and the note is gone."""
    import tarfile

    import numpy as np
    from matplotlib.image import imread

    from avalign.report import COLOURS

    video, audio, transcript = _video2dataset_split(tmp_path / "clips")
    with tarfile.open(tmp_path / "shard-000000.tar", "w") as tar:
        for path in (video, audio, transcript):
            tar.add(path, arcname=path.name)
    truth = json.loads((SAMPLE_DATA / "truth.json").read_text())["clips"]["clip00"]["text_offset_ms"]
    assert main(["report", str(tmp_path / "shard-000000.tar"), "--out", str(tmp_path / "rep"), "--no-progress",
                 "--fail-over-ms", "60", "--gate-on", "text"]) == 1  # its transcript is 180 ms late: over the gate
    capsys.readouterr()
    (clip,) = json.loads((tmp_path / "rep" / "report.json").read_text())["clips"]
    assert abs(clip["text_offset_ms"] - truth) <= 10.0 and clip["page"]
    page = (tmp_path / "rep" / clip["page"]).read_text()  # clips/<key>-<8 hex>.html
    assert "video-only media" not in page
    png = tmp_path / "rep" / clip["page"].replace(".html", "-waveform.png")
    image = np.round(imread(str(png))[..., :3] * 255).astype(np.int16)
    rgb = np.array([int(COLOURS["waveform"][i:i + 2], 16) for i in (1, 3, 5)], dtype=np.int16)
    blue = (np.abs(image - rgb) <= 14).all(axis=-1)
    assert blue.sum(axis=0).max() >= 40, "no waveform drawn"


def test_measure_json_error_names_the_audio_file_that_cannot_be_read(tmp_path, capsys):
    """`--audio` given a file that is no audio (the sample's KEY.json, by a slip of the tab key): the --json error
    document's "file" is that file, not the media (it named the media, which decodes)."""
    video, audio, transcript = _video2dataset_split(tmp_path / "clips")
    assert main(["measure", str(video), "--audio", str(transcript), "--json"]) == 2
    (error,) = json.loads(capsys.readouterr().out).values()
    assert error["file"] == str(transcript) and error["reason"] == "decode" and str(transcript) in error["message"]


def test_the_hint_for_an_unquoted_glob_gives_an_input_that_works_when_pasted(tmp_path, capsys):
    """`avalign preprocess shards/*.tar out/` (unquoted, two shards): the hint said "Quote it ('shards/*.tar')", and
    pasting that got "input not found: 'shards/*.tar' (a glob is not expanded ...)". Now it gives the brace pattern of
    exactly the shards the shell expanded (or, with a gap in their numbers, their directory), and that works."""
    import tarfile

    folder = tmp_path / "shards"
    folder.mkdir()
    shards = []
    for i in range(2):
        shards.append(str(folder / f"train-{i:06d}.tar"))
        with tarfile.open(shards[-1], "w") as tar:
            tar.add(SAMPLE_DATA / "clip00.mp4", arcname=f"k{i}.mp4")
    try:
        main(["preprocess", *shards, str(tmp_path / "out")])
    except SystemExit as e:
        assert e.code == 2
    err = capsys.readouterr().err
    assert "Quote it" not in err
    pattern = re.search(r"Pass '([^']+)'", err).group(1)
    assert pattern == f"{folder}/train-{{000000..000001}}.tar"
    assert main(["preprocess", pattern, str(tmp_path / "out"), "--dry-run"]) == 0
    assert "2 sample(s): k0, k1" in capsys.readouterr().out
    # a gap (000000, 000002): no one pattern names exactly those; the directory is offered
    os.rename(shards[1], folder / "train-000002.tar")
    try:
        main(["report", shards[0], str(folder / "train-000002.tar"), "--out", str(tmp_path / "rep")])
    except SystemExit as e:
        assert e.code == 2
    err = capsys.readouterr().err
    assert f"Pass their directory ({folder})" in err and ".." not in err.split("Pass ")[1].split(" or a brace")[0]


def test_measure_says_which_file_its_audio_came_from_and_keeps_audio_in_the_commands_it_suggests(tmp_path, capsys):
    """With --audio, the table's audio line and --json's "audio" say the samples are the --audio file's (the media
    has none); the note naming the transcript beside the media gives a command that keeps --audio (pasted without
    it, the clip is measured without audio again). The pasted command gives the truth's offset."""
    truth = json.loads((SAMPLE_DATA / "truth.json").read_text())["clips"]["clip00"]["text_offset_ms"]
    video, audio, transcript = _video2dataset_split(tmp_path / "clips")
    assert main(["measure", str(video), "--audio", str(audio)]) == 0
    out, err = capsys.readouterr()
    (line,) = [x for x in out.splitlines() if x.startswith("audio ")]
    assert f"(from {audio}: the media has no audio stream)" in line
    (note,) = [x for x in err.splitlines() if "note:" in x]
    command = shlex.split(re.search(r"`([^`]*)`", note).group(1))
    assert command[command.index("--transcript") + 1] == str(transcript)
    assert command[command.index("--audio") + 1] == str(audio)
    assert main(command[1:] + ["--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["audio"]["file"] == str(audio) and abs(record["text_offset_ms"] - truth) <= 10.0
    # media with its own audio: no "file" (the --audio file was not read)
    assert main(["measure", str(SAMPLE_DATA / "clip00.mp4"), "--audio", str(audio), "--json"]) == 0
    assert "file" not in json.loads(capsys.readouterr().out)["audio"]


def test_a_video2dataset_record_holding_whisper_transcript_keeps_its_caption_in_the_batch(tmp_path, capsys):
    """video2dataset's Whisper subsampler writes its transcript into the sample's metadata record (KEY.json:
    url, key, status, caption, whisper_transcript). Before: with no KEY.txt beside it, that record was read as the
    transcript and its caption was lost (caption_texts (None,)), raw and after preprocess (meta.json), though README
    says a sample with a transcript keeps its caption in caption_texts. Now the caption is the record's."""
    import tarfile

    import loaders

    whisper = json.loads((SAMPLE_DATA / "clip00.json").read_text())
    words = [w["word"].strip() for s in whisper["segments"] for w in s["words"]]
    record = {"url": "https://example.org/v.mp4", "key": "000042", "status": "success",
              "caption": "a person speaks", "whisper_transcript": whisper}
    (tmp_path / "000042.json").write_text(json.dumps(record))
    with tarfile.open(tmp_path / "raw-000000.tar", "w") as tar:
        tar.add(SAMPLE_DATA / "clip00.mp4", arcname="000042.mp4")
        tar.add(tmp_path / "000042.json", arcname="000042.json")
    assert main(["preprocess", str(tmp_path / "raw-000000.tar"), str(tmp_path / "out"), "--no-progress"]) == 0
    capsys.readouterr()
    for shard in (tmp_path / "raw-000000.tar", tmp_path / "out" / "shard-000000.tar"):
        (batch,) = list(loaders.make_loader(str(shard), seed=0, window_seconds=None))
        assert batch.caption_texts == ("a person speaks",), shard
        assert list(batch.word_texts) == words and "a person speaks" not in batch.segment_texts


def test_measure_does_not_suggest_video2dataset_metadata_as_a_transcript(tmp_path, capsys):
    """`avalign measure KEY.mp4` beside video2dataset's KEY.json metadata (url, key, status, caption): the note said
    "KEY.json is beside the media and not read: `avalign measure KEY.mp4 --transcript KEY.json`", and that command
    fails ("segments: missing: it is a clip's metadata ..."). Now metadata is not suggested; a WhisperX KEY.json
    still is, and its command measures the truth's offset."""
    truth = json.loads((SAMPLE_DATA / "truth.json").read_text())["clips"]["clip00"]["text_offset_ms"]
    shutil.copy(SAMPLE_DATA / "clip00.mp4", tmp_path / "000042.mp4")
    (tmp_path / "000042.json").write_text(json.dumps({"url": "https://example.org/v.mp4", "key": "000042",
                                                      "status": "success", "caption": "a person speaks"}))
    assert main(["measure", str(tmp_path / "000042.mp4"), "--json"]) == 0
    assert "note:" not in capsys.readouterr().err
    shutil.copy(SAMPLE_DATA / "clip00.json", tmp_path / "000042.json")  # WhisperX words: a transcript
    assert main(["measure", str(tmp_path / "000042.mp4"), "--json"]) == 0
    (note,) = [x for x in capsys.readouterr().err.splitlines() if "note:" in x]
    command = shlex.split(re.search(r"`([^`]*)`", note).group(1))
    assert main(command[1:] + ["--json"]) == 0
    assert abs(json.loads(capsys.readouterr().out)["text_offset_ms"] - truth) <= 10.0


def test_preprocessing_preprocessed_shards_keeps_the_caption_and_warns_of_nothing_lost(tmp_path, capsys, caplog):
    """Preprocess run again on its own output (to re-encode later, or at another --sample-rate): before, the samples'
    meta.json (video2dataset's record: the caption) was dropped, with a WARNING that also listed the align.json /
    frames.json this run writes afresh as "not written to the output shards ... keep the input shards for them"; a
    caption only in that record was lost in the batches. Now meta.json passes through and nothing is said lost."""
    import logging
    import tarfile

    import loaders

    whisper = json.loads((SAMPLE_DATA / "clip00.json").read_text())
    truth = json.loads((SAMPLE_DATA / "truth.json").read_text())["clips"]["clip00"]["text_offset_ms"]
    (tmp_path / "000042.json").write_text(json.dumps({"key": "000042", "status": "success",
                                                      "caption": "a person speaks", "whisper_transcript": whisper}))
    with tarfile.open(tmp_path / "raw-000000.tar", "w") as tar:
        tar.add(SAMPLE_DATA / "clip00.mp4", arcname="000042.mp4")
        tar.add(tmp_path / "000042.json", arcname="000042.json")
    assert main(["preprocess", str(tmp_path / "raw-000000.tar"), str(tmp_path / "once"), "--no-progress"]) == 0
    with caplog.at_level(logging.WARNING, logger="avalign"):
        assert main(["preprocess", str(tmp_path / "once"), str(tmp_path / "twice"), "--no-progress"]) == 0
    capsys.readouterr()
    assert not [r for r in caplog.records if "not written to the output shards" in r.getMessage()]
    (batch,) = list(loaders.make_loader(str(tmp_path / "twice" / "shard-000000.tar"), seed=0, window_seconds=None))
    assert batch.caption_texts == ("a person speaks",)
    with tarfile.open(tmp_path / "twice" / "shard-000000.tar") as tar:
        assert "000042.meta.json" in tar.getnames()
        assert abs(json.load(tar.extractfile("000042.align.json"))["text_offset_ms"] - truth) <= 10.0


def test_report_of_one_video_file_reads_its_audio_file_beside_it(tmp_path, capsys):
    """`avalign report KEY.mp4` (one video-only file, KEY.m4a beside it) measured the clip without audio (text offset
    null), as `preprocess KEY.mp4 out/` does not (it takes the same-stem files). Now the audio file is read."""
    truth = json.loads((SAMPLE_DATA / "truth.json").read_text())["clips"]["clip00"]["text_offset_ms"]
    video, audio, transcript = _video2dataset_split(tmp_path / "clips")
    assert main(["report", str(video), "--out", str(tmp_path / "rep"), "--no-progress", "--clip-pages", "0"]) == 0
    capsys.readouterr()
    (clip,) = json.loads((tmp_path / "rep" / "report.json").read_text())["clips"]
    assert clip["has_video"] and abs(clip["text_offset_ms"] - truth) <= 10.0, clip["text_offset_ms"]


def test_too_few_shards_for_the_ranks_says_how_preprocess_writes_more(tmp_path, capsys):
    """Two raw shards preprocessed with the defaults become one output shard (100 samples a shard); a 2-rank
    loader on it is refused ("write at least world_size shards (split them finer)") without saying how. The message
    now names `--samples-per-shard`; following it, the two ranks read disjoint samples that cover the epoch."""
    import tarfile

    import loaders

    raw = []
    for i in range(2):
        raw.append(tmp_path / f"raw-{i:06d}.tar")
        with tarfile.open(raw[-1], "w") as tar:
            tar.add(SAMPLE_DATA / "clip00.mp4", arcname=f"k{i}.mp4")
    pattern = str(tmp_path / "raw-{000000..000001}.tar")
    assert main(["preprocess", pattern, str(tmp_path / "out"), "--no-progress"]) == 0
    try:
        loaders.make_loader(str(tmp_path / "out" / "shard-000000.tar"), seed=0, rank=0, world_size=2)
        raise AssertionError("a loader with more ranks than shards was not refused")
    except ValueError as error:
        hint = re.search(r"`avalign preprocess INPUT OUT (--samples-per-shard) N`", str(error))
    assert hint, "the message does not say how to write more shards"
    assert main(["preprocess", pattern, str(tmp_path / "finer"), "--no-progress", hint.group(1), "1"]) == 0
    capsys.readouterr()
    shards = str(tmp_path / "finer" / "shard-{000000..000001}.tar")
    keys = [[k for b in loaders.make_loader(shards, seed=0, rank=r, world_size=2, window_seconds=None,
                                            even_batches="pad") for k in b.sample_keys] for r in (0, 1)]
    assert sorted(keys[0] + keys[1]) == ["k0", "k1"] and not set(keys[0]) & set(keys[1])


def test_a_dataloader_worker_without_a_shard_says_so(tmp_path, capfd):
    """make_dataset through DataLoader(num_workers=2) on preprocess's one output shard: shard p goes to worker
    p % num_workers, so one worker decoded everything and the other nothing, silently (the epoch at one worker's
    speed). Now that worker warns, naming --samples-per-shard and make_loader; with as many shards as workers, no
    warning. The batches are the same either way (every sample once)."""
    import logging
    import sys
    import tarfile

    import loaders
    from torch.utils.data import DataLoader

    for i in range(2):
        with tarfile.open(tmp_path / f"s-{i:06d}.tar", "w") as tar:
            tar.add(SAMPLE_DATA / "clip00.mp4", arcname=f"k{i}.mp4")
    handler = logging.StreamHandler(sys.stderr)  # the workers' warnings, on the stderr capfd reads
    logging.getLogger("loaders").addHandler(handler)
    try:
        for shards, idle in (("s-000000.tar", True), ("s-{000000..000001}.tar", False)):
            ds = loaders.make_dataset(str(tmp_path / shards), seed=0, window_seconds=None)
            keys = [k for b in DataLoader(ds, batch_size=None, num_workers=2) for k in b.sample_keys]
            err = capfd.readouterr().err
            assert sorted(keys) == (["k0"] if idle else ["k0", "k1"])
            said = "this rank has 1 shard(s)" in err and "1 worker(s) decode nothing" in err
            assert said == idle, err
            if idle:
                assert "--samples-per-shard" in err and "make_loader" in err
    finally:
        logging.getLogger("loaders").removeHandler(handler)
