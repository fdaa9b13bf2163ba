"""A fresh user's round (user66): a directory of yt-dlp downloads (``talk.mp4`` beside ``talk.en.vtt``, as
``yt-dlp --write-subs --sub-langs en`` names them) is read as its shards are. Before, ``avalign preprocess`` and
``avalign report`` measured ``talk.mp4`` without its subtitles and listed ``talk.en.vtt`` as ``missing_media`` (with a
hint to rename it), while the same files packed as a shard's ``KEY.en.vtt`` member were read. Oracle: the files the
test wrote (their names, the cue's words) and sample_data's truth (clip01's transcript offset: 90 ms)."""
from __future__ import annotations

import json
import logging
import shutil

from avalign.cli import main
from avalign.preprocess import list_inputs
from tests.conftest import SAMPLE_DATA, ffmpeg

SRT = "1\n00:00:00,200 --> 00:00:01,000\nhello there\n"


def _media(d, name="talk.mp4", source="clip00.mp4"):
    d.mkdir(exist_ok=True)
    shutil.copy(SAMPLE_DATA / source, d / name)


def test_a_directorys_language_tagged_subtitle_is_its_medias_transcript(tmp_path):
    _media(tmp_path)
    (tmp_path / "talk.en.srt").write_text(SRT)
    plan = list_inputs(str(tmp_path))
    (sample,) = plan.samples
    assert sample.key == "talk" and sample.transcript.path == str(tmp_path / "talk.en.srt")
    assert sample.transcript_format == "en.srt" and plan.skipped == ()
    # one media file given as input takes its tagged subtitle too
    (one,) = list_inputs(str(tmp_path / "talk.mp4")).samples
    assert one.transcript.path == str(tmp_path / "talk.en.srt")
    # yt-dlp's own file names ("%(title)s [%(id)s].%(ext)s"), with a regional tag
    ytdlp = tmp_path / "yt"
    _media(ytdlp, "Talk [abc].mp4")
    (ytdlp / "Talk [abc].pt-BR.vtt").write_text("WEBVTT\n\n00:00.200 --> 00:01.000\nhello there\n")
    (sample,) = list_inputs(str(ytdlp)).samples
    assert sample.transcript.path == str(ytdlp / "Talk [abc].pt-BR.vtt")


def test_several_tags_and_no_untagged_transcript_read_none_as_in_a_shard(tmp_path, caplog):
    _media(tmp_path)
    (tmp_path / "talk.en.srt").write_text(SRT)
    (tmp_path / "talk.de.srt").write_text(SRT)
    with caplog.at_level(logging.WARNING):
        (sample,) = list_inputs(str(tmp_path)).samples
    assert sample.transcript is None
    assert any("several language-tagged subtitles (de.srt, en.srt)" in r.getMessage() for r in caplog.records)


def test_preprocess_and_report_measure_a_yt_dlp_directory_against_its_en_vtt(tmp_path):
    """sample_data's clip01 with its own SRT, renamed as yt-dlp names it: the transcript offset is measured (truth
    90 ms, as on the untagged SRT) and every word counted; before, both were null / 0."""
    clips = tmp_path / "clips"
    _media(clips, "talk.mkv", "clip01.mkv")
    shutil.copy(SAMPLE_DATA / "clip01.srt", clips / "talk.en.srt")
    truth = json.loads((SAMPLE_DATA / "truth.json").read_text())
    assert main(["preprocess", str(clips), str(tmp_path / "out"), "--no-progress"]) == 0
    (row,) = [json.loads(line) for line in (tmp_path / "out" / "manifest.jsonl").read_text().splitlines()]
    untagged = tmp_path / "plain"
    _media(untagged, "talk.mkv", "clip01.mkv")
    shutil.copy(SAMPLE_DATA / "clip01.srt", untagged / "talk.srt")
    assert main(["preprocess", str(untagged), str(tmp_path / "out_plain"), "--no-progress"]) == 0
    (plain,) = [json.loads(line) for line in (tmp_path / "out_plain" / "manifest.jsonl").read_text().splitlines()]
    assert row["num_words"] == plain["num_words"] > 0
    main(["report", str(clips), "--out", str(tmp_path / "rep"), "--no-progress"])
    report = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert report["skipped"] == []
    (clip,) = report["clips"]
    true_ms = truth["clips"]["clip01"]["text_offset_ms"]
    assert clip["text_offset_ms"] is not None and abs(clip["text_offset_ms"] - true_ms) <= 10.0, clip


# ------------------------------------------------- openai-whisper --word_timestamps True --highlight_words True

def _stamp(seconds: float, sep: str) -> str:
    ms = round(seconds * 1000)
    return f"{ms // 3600000:02d}:{ms // 60000 % 60:02d}:{ms // 1000 % 60:02d}{sep}{ms % 1000:03d}"


def _highlighted(segments, *, vtt: bool) -> str:
    """Subtitles as openai-whisper's ``SubtitlesWriter.iterate_result`` writes them with ``highlight_words``: per
    segment, a cue per word (that word underlined, timed to it) and a plain cue over any gap between words."""
    cues = []
    for words in segments:
        line = " ".join(w for w, _, _ in words)
        last = _stamp(words[0][1], ",")
        for i, (_, start, stop) in enumerate(words):
            if last != _stamp(start, ","):
                cues.append((last, _stamp(start, ","), line))
            cues.append((_stamp(start, ","), _stamp(stop, ","),
                         " ".join(f"<u>{w}</u>" if j == i else w for j, (w, _, _) in enumerate(words))))
            last = _stamp(stop, ",")
    if vtt:
        return "WEBVTT\n\n" + "".join(f"{a.replace(',', '.')} --> {b.replace(',', '.')}\n{t}\n\n" for a, b, t in cues)
    return "".join(f"{k + 1}\n{a} --> {b}\n{t}\n\n" for k, (a, b, t) in enumerate(cues))


WORDS = [[("Bobby", 0.065, 0.412), ("ripped", 0.412, 0.658), ("the", 0.70, 0.741)],
         [("ledger.", 2.0, 2.5), ("Mary", 2.5, 2.9)]]


def test_whisper_highlight_words_subtitles_are_read_as_words_of_one_segment():
    """Before: 6 cues read as 6 segments, each the whole line (the sentence aligned once per word, no word times).
    Oracle: the word times written (rounded to the ms as Whisper writes them)."""
    from loaders import read_transcript

    for vtt in (False, True):
        text = _highlighted(WORDS, vtt=vtt)
        assert text.count("<u>") == 5 and "Bobby ripped the\n" in text  # one gap cue (0.658-0.700)
        t = read_transcript(text.encode(), name="talk.vtt" if vtt else "talk.srt")
        assert [s.text for s in t.spans] == ["Bobby ripped the", "ledger. Mary"]
        assert [(s.start_seconds, s.stop_seconds) for s in t.spans] == [(0.065, 0.741), (2.0, 2.9)]
        got = [(w.text, w.start_seconds, w.stop_seconds) for s in t.spans for w in s.words]
        assert got == [w for seg in WORDS for w in seg]


def test_underlined_words_of_ordinary_subtitles_are_left_as_they_are():
    """Emphasis in a subtitle (one underlined word, a cue of its own text) is not a highlight run."""
    from loaders import read_transcript

    srt = ("1\n00:00:01,000 --> 00:00:02,000\nI <u>really</u> mean it\n\n"
           "2\n00:00:02,000 --> 00:00:03,000\nand <u>so</u> do I\n\n"
           "3\n00:00:03,000 --> 00:00:04,000\nand <u>so</u> do I\n\n")  # same text again, same word: not a run
    t = read_transcript(srt.encode(), name="a.srt")
    assert [(s.text, s.start_seconds, len(s.words)) for s in t.spans] == [
        ("I really mean it", 1.0, 0), ("and so do I", 2.0, 0), ("and so do I", 3.0, 0)]


def test_a_highlight_srt_on_sample_data_gives_the_transcript_offset(tmp_path):
    """sample_data's clip01 (truth: stamps 90 ms late) with its words written as Whisper's highlight SRT: the offset is
    measured from the words (before: abstained, words_not_heard, every cue being the whole sentence)."""
    import aligner
    import loaders

    truth = json.loads((SAMPLE_DATA / "truth.json").read_text())["clips"]["clip01"]
    words = [(w["text"], w["start_seconds"], w["stop_seconds"]) for w in truth["words"]]
    segments = [words[:4], words[4:8], words[8:]]
    (tmp_path / "clip01.srt").write_text(_highlighted(segments, vtt=False))
    media = str(SAMPLE_DATA / "clip01.mkv")
    text = loaders.read_transcript(str(tmp_path / "clip01.srt"))
    assert [len(s.words) for s in text.spans] == [len(s) for s in segments]
    sample = aligner.align(loaders.read_video(media), loaders.read_audio(media), text, sample_rate=16000)
    assert sample.report.text_offset_ms is not None
    assert abs(sample.report.text_offset_ms - truth["text_offset_ms"]) <= 10.0, sample.report


# ------------------------------------------------- a tokenizer that returns ids only (tiktoken's / sentencepiece's encode)

def test_an_ids_only_tokenizer_is_told_it_lacks_offsets_even_with_two_ids(tmp_path):
    """Before: ``tiktoken``'s ``enc.encode`` gives "hello world" two ids ([15339, 1917]), read as ``(ids, offsets)``:
    "'int' object is not iterable". Oracle: the ids the test's tokenizers return; the caption-only shard is the
    sample_data clip01 packed with a caption (tokenized, so the probe runs)."""
    import numpy as np
    import torch

    import loaders
    from tests.conftest import write_tar

    shard = write_tar(tmp_path / "s.tar", [("k0.mkv", (SAMPLE_DATA / "clip01.mkv").read_bytes()),
                                           ("k0.txt", b"maps show hidden valleys")])
    for ids in ([15339, 1917], [15339, 1917, 7], [np.int64(1), np.int64(2)]):
        ds = loaders.make_dataset(str(shard), seed=0, tokenizer=lambda text, ids=ids: ids)
        try:
            next(iter(ds))
        except TypeError as error:
            message = str(error)
        else:
            raise AssertionError("no error")
        assert message.startswith("tokenizer function is unusable: on the probe text 'hello world': tokenizer output "
                                  f"must carry ids and character offsets, got list of {len(ids)} ids and no offsets")
        assert "pass a callable text -> (ids, offsets)" in message
    # (ids, offsets) as tensors, one token each, is still (ids, offsets)
    ds = loaders.make_dataset(str(shard), seed=0, tokenizer=lambda text: (torch.tensor([7]), torch.tensor([[0, len(text)]])))
    batch = next(iter(ds))
    assert batch.token_ids[0].item() == 7


# ------------------------------------------------- report's gate on speech over footage without sync events

def _row(key, av, text, av_why="no_visual_events", text_why="few_caption_edges"):
    reasons = {**({"av_offset_ms": av_why} if av is None else {}), **({"text_offset_ms": text_why} if text is None else {})}
    return {"key": key, "shard": "s.tar", "av_offset_ms": av, "text_offset_ms": text, "has_video": True,
            "has_transcript": True, "abstain_reasons": reasons}


def test_too_many_abstentions_says_which_offset_abstained_and_how_to_gate_on_the_other():
    """Before: my five clips (speech over Big Buck Bunny / carphone / a talking head) failed with "5 of 5 clip(s)
    abstained (100%)" though 4 had a transcript offset: nothing said it was the A/V offset, nor why, nor
    ``--gate-on text``. Oracle: the rows' nulls and reasons, written here (as my real run gave them)."""
    from avalign.report import gate

    rows = [_row("c00", None, -117.1, "too_few_events"), _row("c01", None, None), _row("c02", None, -85.0, "too_few_events"),
            _row("c03", None, 2.9), _row("c04", None, 77.9)]
    (reason,) = gate(rows, fail_over_ms=60.0)["reasons"]
    assert reason["code"] == "too_many_abstentions"
    assert reason["message"].startswith(
        "5 of 5 clip(s) abstained (100%), over --max-abstain 0.5 (50%): av_offset_ms null on 5 (no_visual_events 3, "
        "too_few_events 2), text_offset_ms null on 1 (few_caption_edges 1); hint: the transcript offset was measured on "
        "4 of 5 clip(s) with a transcript")
    assert reason["message"].endswith("gate on the transcript offset alone with --gate-on text")
    assert gate(rows, fail_over_ms=60.0, gate_on="text")["reasons"] == []
    # most transcripts abstaining too: the breakdown, no hint to gate on them
    rows = [_row("a", None, None), _row("b", None, None), _row("c", None, 5.0)]
    (reason,) = gate(rows, fail_over_ms=60.0)["reasons"]
    assert reason["message"] == ("3 of 3 clip(s) abstained (100%), over --max-abstain 0.5 (50%): av_offset_ms null on "
                                 "3 (no_visual_events 3), text_offset_ms null on 2 (few_caption_edges 2)")
    # one gated field: the count is the message
    rows[0] = _row("a", 10.0, None)
    (reason,) = gate(rows, fail_over_ms=60.0, gate_on="av")["reasons"]
    assert reason["message"] == "2 of 3 clip(s) abstained (67%), over --max-abstain 0.5 (50%)"


def test_readme_says_raw_shards_need_estimate_for_offsets():
    """Before: the README's loader examples read "shards/train-…" with no word that raw shards (no align.json) get no
    offset at all unless ``estimate=True``; my raw shards' words came out up to 4 frames (120 ms) off, silently.
    Oracle: the README's text, beside the first loader example."""
    from tests.conftest import REPO

    readme = (REPO / "README.md").read_text()
    note = readme.index("On raw shards pass\n# estimate=True")
    assert note < readme.index('loader = loaders.make_loader("shards/train-') < note + 400


def test_whisper_highlight_words_with_two_line_subtitles_keep_the_gap_cue_in_the_run():
    """``--max_line_width`` wraps a subtitle on two lines; the plain cue over a pause between two words then repeats
    both lines of the cue before it, the shape of a roll-up snapshot: it was dropped as one, which split the segment
    (its first word left as a segment of the whole text, no words). Oracle: the times written."""
    from loaders import read_transcript

    cues = [("01,000", "01,400", "<u>Bobby</u> ripped\nthe ledger"), ("01,400", "01,800", "Bobby ripped\nthe ledger"),
            ("01,800", "02,000", "Bobby <u>ripped</u>\nthe ledger"), ("02,000", "02,200", "Bobby ripped\n<u>the</u> ledger"),
            ("02,200", "02,600", "Bobby ripped\nthe <u>ledger</u>")]
    srt = "".join(f"{k + 1}\n00:00:{a} --> 00:00:{b}\n{t}\n\n" for k, (a, b, t) in enumerate(cues))
    for name, text in (("a.srt", srt), ("a.vtt", "WEBVTT\n\n" + srt.replace(",", "."))):
        (span,) = read_transcript(text.encode(), name=name).spans
        assert (span.text, span.start_seconds, span.stop_seconds) == ("Bobby ripped the ledger", 1.0, 2.6)
        assert [(w.text, w.start_seconds, w.stop_seconds) for w in span.words] == [
            ("Bobby", 1.0, 1.4), ("ripped", 1.8, 2.0), ("the", 2.0, 2.2), ("ledger", 2.2, 2.6)]


# ------------------------------------------------- make_dataset(fps=...): where an item's frame grid starts

def test_fps_grid_starts_at_the_clips_first_frame_as_make_dataset_says(tmp_path):
    """My clip c03 (video from 0.08 s) read with ``fps=5``: a frame index k is the frame played at the first frame's
    time + k/5, not at k/5; ``make_dataset``'s doc only said "each grid time". Oracle: ffprobe's frame times of a clip
    whose video starts at 0.5 s, and a word-level JSON's times (``estimate=False``: applied as written)."""
    import numpy as np

    import loaders
    from tests.conftest import ffmpeg, ffprobe_frame_times, tiny_clip, write_tar

    clip, plain = tmp_path / "late.mp4", tmp_path / "plain.mp4"
    tiny_clip(plain, 3.0, fps=30, sample_rate=16000)
    ffmpeg("-itsoffset", "0.5", "-i", str(plain), "-i", str(plain), "-map", "0:v", "-map", "1:a", "-c", "copy", str(clip))
    pts = ffprobe_frame_times(clip)
    assert abs(pts[0] - 0.5) < 0.01
    words = [("one", 0.61, 0.95), ("two", 1.05, 1.55), ("three", 1.62, 2.3)]
    doc = {"segments": [{"start": 0.61, "end": 2.3, "text": "one two three",
                         "words": [{"word": w, "start": s, "end": e} for w, s, e in words]}]}
    shard = write_tar(tmp_path / "s.tar", [("k.mp4", clip.read_bytes()), ("k.json", json.dumps(doc).encode())])
    (batch,) = list(loaders.make_dataset(str(shard), seed=0, fps=5, tail="trim"))
    grid = pts[0] + np.arange(int(batch.cu_seqlens_frames[1])) / 5
    played = np.array([pts[np.searchsorted(pts, t + 1e-9, "right") - 1] for t in grid])
    expected = []
    for _, s, e in words:
        inside = np.nonzero((played >= s) & (played < e))[0]
        expected.append((int(inside[0]), int(inside[-1]) + 1))
    assert [tuple(r[1:3]) for r in batch.word_spans[:batch.num_words].tolist()] == expected
    assert expected != [(int(np.ceil(s * 5)), int(np.ceil(e * 5))) for _, s, e in words]  # not a grid from 0
    assert "its clip's first frame time + k / fps" in " ".join(loaders.make_dataset.__doc__.split())


# ------------------------------------------------- whisper.cpp's output names: talk.mp4.srt beside talk.mp4

def test_a_transcript_named_after_the_whole_media_file_is_its_transcript(tmp_path, capsys):
    """whisper.cpp writes ``-osrt`` / ``-oj`` output as the input's whole name plus the format (``talk.mkv.srt``).
    Before: ``preprocess`` skipped it as ``missing_media`` with "'talk.mkv' has this stem plus '.mkv'" and measured
    the clip without it; ``report`` likewise; ``measure`` did not name it. Oracle: sample_data clip01's truth (stamps
    90 ms late) and the files the test wrote."""
    clips = tmp_path / "clips"
    _media(clips, "talk.mkv", "clip01.mkv")
    shutil.copy(SAMPLE_DATA / "clip01.srt", clips / "talk.mkv.srt")
    plan = list_inputs(str(clips))
    (sample,) = plan.samples
    assert sample.transcript.path == str(clips / "talk.mkv.srt") and sample.transcript_format == "srt"
    assert plan.skipped == ()
    main(["report", str(clips), "--out", str(tmp_path / "rep"), "--no-progress", "--clip-pages", "0"])
    report = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert report["skipped"] == []
    (clip,) = report["clips"]
    assert abs(clip["text_offset_ms"] - 90.0) <= 10.0, clip
    capsys.readouterr()
    main(["measure", str(clips / "talk.mkv")])
    assert f"{clips / 'talk.mkv.srt'} is beside the media and not read" in capsys.readouterr().err
    # an untagged talk.srt beside it is the one read (as talk.en.srt would be)
    (clips / "talk.srt").write_text("1\n00:00:00,200 --> 00:00:01,000\nhello there\n")
    (sample,) = list_inputs(str(clips)).samples
    assert sample.transcript.path == str(clips / "talk.srt")
    # whisper.cpp on an extracted WAV (it reads 16 kHz WAV): talk.wav.json beside talk.wav
    wavs = tmp_path / "wavs"
    wavs.mkdir()
    ffmpeg("-i", str(SAMPLE_DATA / "clip01.mkv"), "-vn", "-ac", "1", "-ar", "16000", str(wavs / "talk.wav"))
    (wavs / "talk.wav.json").write_text(json.dumps({"transcription": [
        {"timestamps": {"from": "00:00:00,317", "to": "00:00:01,814"}, "offsets": {"from": 317, "to": 1814},
         "text": " Maps show hidden valleys"}]}))
    (sample,) = list_inputs(str(wavs)).samples
    assert sample.transcript.path == str(wavs / "talk.wav.json") and sample.transcript_format == "json"
