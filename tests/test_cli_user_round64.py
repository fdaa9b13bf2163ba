"""A user's defects (round 64): each test writes what the user had (a phonetician's TextGrid, ...) and checks what
avalign says about it against what the test wrote."""
from __future__ import annotations

import logging

# ---------------------------------------------------------------- 1. a TextGrid of phones only


def _textgrid(tiers: dict[str, list[tuple[float, float, str]]], xmax: float) -> str:
    """A long-format Praat TextGrid of interval tiers ``{name: [(xmin, xmax, text)]}``."""
    out = ['File type = "ooTextFile"', 'Object class = "TextGrid"', "", "xmin = 0", f"xmax = {xmax}", "tiers? <exists>",
           f"size = {len(tiers)}", "item []:"]
    for i, (name, entries) in enumerate(tiers.items(), start=1):
        out += [f"    item [{i}]:", '        class = "IntervalTier"', f'        name = "{name}"', "        xmin = 0",
                f"        xmax = {xmax}", f"        intervals: size = {len(entries)}"]
        for j, (a, b, text) in enumerate(entries, start=1):
            out += [f"        intervals [{j}]:", f"            xmin = {a}", f"            xmax = {b}",
                    f'            text = "{text}"']
    return "\n".join(out) + "\n"


# praat-parselmouth 0.4.7's tests/data/the_north_wind_and_the_sun.TextGrid: one tier, "phonemes", IPA labels.
NORTH_WIND_PHONES = [(0.0, 0.068, ""), (0.068, 0.089, "ð"), (0.089, 0.120, "ə"), (0.120, 0.206, "n"),
                     (0.206, 0.309, "ɔ"), (0.309, 0.462, "θ"), (0.462, 0.495, "w"), (0.495, 0.550, "ɪ"),
                     (0.550, 0.686, "n"), (0.686, 0.707, "d"), (0.707, 1.283, "")]


def test_a_textgrid_of_phones_only_gives_no_phone_captions(tmp_path, caplog):
    """Before: a TextGrid whose only tier is a phone tier (parselmouth's North Wind: ``phonemes``) was read as one
    caption per phone (``ð``, ``ə``, ``n``...: 15 spans on the real file), although the reader's rule is that phone
    tiers are never read; forced alignment then refused "15 words in 1.28 s" and the phones reached the batch's
    ``segment_texts`` and tokens. Now no span is read, with one warning naming the file and the tier and what to add.
    A grid with a word tier beside its phone tier still gives the words. Oracle: the tiers the test wrote."""
    import loaders

    grid = tmp_path / "north_wind.TextGrid"
    grid.write_text(_textgrid({"phonemes": NORTH_WIND_PHONES}, 1.283), encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="loaders"):
        transcript = loaders.read_transcript(str(grid))
    assert [s.text for s in transcript.spans] == []
    said = [r.getMessage() for r in caplog.records if "phone tier" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith(f"{grid}: only phone tier(s) 'phonemes' (9 interval(s))"), said
    assert "add a tier named 'words'" in said[0]

    words = [(0.0, 0.068, ""), (0.068, 0.120, "the"), (0.120, 0.462, "north"), (0.462, 0.707, "wind"),
             (0.707, 1.283, "")]
    both = tmp_path / "both.TextGrid"
    both.write_text(_textgrid({"phonemes": NORTH_WIND_PHONES, "words": words}, 1.283), encoding="utf-8")
    assert [w.text for s in loaders.read_transcript(str(both)).spans for w in s.words] == ["the", "north", "wind"]


# ---------------------------------------------------------------- 2. measure without --transcript, a transcript there


def test_measure_without_transcript_names_the_transcripts_it_did_not_read(tmp_path, capsys):
    """Before: ``avalign measure talk.mkv`` with ``talk.srt`` beside it, or yt-dlp's ``talk.en.vtt``, or an SRT track
    inside the MKV, printed no text offset and no words and said nothing about them (``preprocess`` pairs a same-stem
    sidecar; ``measure`` reads only ``--transcript``). Now stderr names each one with the command that reads it
    (quoted for a yt-dlp name with spaces); records (``talk.info.json``) are not named; ``--json``'s stdout stays one
    document. Oracle: the files and the stream the test wrote."""
    import json
    import shlex
    import shutil
    import subprocess

    from tests.conftest import tiny_clip

    if shutil.which("ffmpeg") is None:
        import pytest

        pytest.skip("ffmpeg not installed")
    from avalign.cli import main

    folder = tmp_path / "yt dl"
    folder.mkdir()
    media = folder / "Talk [abc].mp4"
    tiny_clip(media, 1.0, fps=10, sample_rate=16000)
    srt = "1\n00:00:00,100 --> 00:00:00,900\nHello there.\n"
    (folder / "Talk [abc].en.vtt").write_text("WEBVTT\n\n00:00.100 --> 00:00.900\nHello there.\n")
    (folder / "Talk [abc].info.json").write_text(json.dumps({"id": "abc", "title": "Talk"}))
    assert main(["measure", str(media), "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["transcript"] is None
    notes = [line for line in err.splitlines() if line.startswith("avalign measure: note:")]
    vtt = folder / "Talk [abc].en.vtt"
    assert notes == [f"avalign measure: note: no --transcript given; {vtt} is beside the media and not read (measure "
                     f"reads only --transcript): `avalign measure {shlex.quote(str(media))} --transcript "
                     f"{shlex.quote(str(vtt))}`"], err

    (tmp_path / "talk.srt").write_text(srt)
    mkv = tmp_path / "talk.mkv"
    subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-y", "-i", str(media), "-i", str(tmp_path / "talk.srt"),
                    "-map", "0", "-map", "1", "-c", "copy", "-metadata:s:s:0", "language=eng", str(mkv)], check=True)
    (tmp_path / "talk.srt").rename(tmp_path / "other.srt")
    assert main(["measure", str(mkv)]) == 0
    err = capsys.readouterr().err
    notes = [line for line in err.splitlines() if line.startswith("avalign measure: note:")]
    assert len(notes) == 1 and "its subtitle stream 2 (" in notes[0] and ", eng) is not read" in notes[0], err
    assert f"`ffmpeg -i {mkv} -map 0:s:0 subs.srt`" in notes[0]
    # the command it gives extracts the cue the test wrote
    subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-y", "-i", str(mkv), "-map", "0:s:0", str(tmp_path / "subs.srt")],
                   check=True)
    import loaders

    assert [s.text for s in loaders.read_transcript(str(tmp_path / "subs.srt")).spans] == ["Hello there."]
    assert main(["measure", str(mkv), "--transcript", str(tmp_path / "subs.srt")]) == 0
    assert "note:" not in capsys.readouterr().err


# ---------------------------------------------------------------- 3. faster-whisper's namedtuples dumped as arrays


def test_faster_whisper_namedtuples_dumped_as_arrays_get_a_hint_that_works(tmp_path):
    """Before: ``json.dump([s._asdict() for s in segments])`` of faster-whisper (< 1.1: ``Segment`` and ``Word`` are
    namedtuples; ``_asdict`` keeps the words as namedtuples, which JSON writes as arrays) was refused as
    ``[0].words[0]: expected an object with 'word', 'start', 'end', got [0.1, 0.4, ' Hello', 0.9]``, and a dump of
    the segments themselves as ``[0]: expected an object with 'text', ...``: what, not how to fix. Now each says it
    looks like faster-whisper's Word / Segment written as an array and gives the dump that writes objects; the test
    runs that dump and reads the words back. Oracle: faster-whisper 1.0's field order, as namedtuples here."""
    import json
    from collections import namedtuple

    import pytest

    import loaders
    from loaders.errors import TranscriptError

    Word = namedtuple("Word", "start end word probability")
    Segment = namedtuple("Segment", "id seek start end text tokens temperature avg_logprob compression_ratio "
                                    "no_speech_prob words")
    segments = [Segment(1, 0, 0.1, 0.9, " Hello there.", [50364, 2425], 0.0, -0.2, 1.1, 0.01,
                        [Word(0.1, 0.4, " Hello", 0.9), Word(0.45, 0.9, " there.", 0.8)])]
    naive = tmp_path / "asdict.json"
    naive.write_text(json.dumps([s._asdict() for s in segments]))
    with pytest.raises(TranscriptError) as words_error:
        loaders.read_transcript(str(naive))
    assert str(words_error.value).startswith(f"{naive}: [0].words[0]: expected an object with 'word', 'start', 'end', "
                                             "got [0.1, 0.4, ' Hello', 0.9]; hint: this looks like faster-whisper's "
                                             "Word [start, end, word, probability] written as a JSON array")
    whole = tmp_path / "tuples.json"
    whole.write_text(json.dumps(segments))
    with pytest.raises(TranscriptError) as segment_error:
        loaders.read_transcript(str(whole))
    assert "[0]: expected an object with 'text', 'start', 'end'" in str(segment_error.value)
    assert "hint: this looks like faster-whisper's Segment [id, seek, start, end, text, ...]" in str(segment_error.value)

    hint = str(words_error.value).split("e.g. ", 1)[1]
    assert hint == str(segment_error.value).split("e.g. ", 1)[1]
    fixed = tmp_path / "fixed.json"
    with open(fixed, "w") as f:
        eval(hint, {"json": json, "segments": segments, "f": f})  # the dump the hint gives, as written
    transcript = loaders.read_transcript(str(fixed))
    assert [(w.text, w.start_seconds, w.stop_seconds) for s in transcript.spans for w in s.words] == [
        ("Hello", 0.1, 0.4), ("there.", 0.45, 0.9)]
    with pytest.raises(TranscriptError) as other:  # an array of something else: no faster-whisper hint
        naive.write_text(json.dumps([{"start": 0.1, "end": 0.9, "text": "x", "words": [["Hello", 0.1]]}]))
        loaders.read_transcript(str(naive))
    assert "faster-whisper" not in str(other.value)


# ---------------------------------------------------------------- 4. forced aligners' JSON: say which tool and what to export


def test_forced_aligner_json_names_the_tool_and_the_export_that_is_read(tmp_path):
    """Before: Montreal Forced Aligner's JSON export (``{"start", "end", "tiers": {"words": {"type", "entries"}}}``)
    and an aeneas sync map (``{"fragments": [{"begin", "end", "lines"}]}``) were refused as ``segments: missing;
    hint: expected WhisperX/whisper JSON with a 'segments' list``, advice that their tools cannot follow. Now each is
    named, with the export that is read: MFA's TextGrid (the test writes MFA's two tiers and reads the words back),
    aeneas's SRT / VTT / TextGrid. Oracle: the layouts and words the test wrote."""
    import json

    import pytest

    import loaders
    from loaders.errors import TranscriptError

    words = [(0.1, 0.4, "hello"), (0.45, 0.9, "there")]
    mfa = tmp_path / "talk.json"
    mfa.write_text(json.dumps({"start": 0, "end": 1.0, "tiers": {
        "words": {"type": "interval", "entries": [list(w) for w in words]},
        "phones": {"type": "interval", "entries": [[0.1, 0.2, "HH"], [0.2, 0.4, "OW1"]]}}}))
    with pytest.raises(TranscriptError) as error:
        loaders.read_transcript(str(mfa))
    assert str(error.value) == (f"{mfa}: segments: missing: this looks like Montreal Forced Aligner's JSON export (its "
                                "'tiers'), not a Whisper layout; hint: align with MFA's default `--output_format "
                                "long_textgrid` and give the .TextGrid (its word tiers are read)")
    grid = tmp_path / "talk.TextGrid"
    grid.write_text(_textgrid({"words": [(0.0, 0.1, "")] + words + [(0.9, 1.0, "")],
                               "phones": [(0.0, 0.1, ""), (0.1, 0.2, "HH"), (0.2, 1.0, "")]}, 1.0), encoding="utf-8")
    assert [(w.text, w.start_seconds) for s in loaders.read_transcript(str(grid)).spans for w in s.words] == [
        ("hello", 0.1), ("there", 0.45)]

    aeneas = tmp_path / "sync.json"
    aeneas.write_text(json.dumps({"fragments": [{"begin": "0.100", "end": "0.900", "id": "f000001", "language": "eng",
                                                 "lines": ["hello there"], "children": []}]}))
    with pytest.raises(TranscriptError, match=r"this looks like an aeneas sync map \(its 'fragments'\), not a Whisper "
                                              r"layout; hint: run aeneas with `os_task_file_format=srt`"):
        loaders.read_transcript(str(aeneas))
    other = tmp_path / "other.json"  # another layout keeps the general hint
    other.write_text(json.dumps({"results": {"items": []}}))
    with pytest.raises(TranscriptError, match="expected WhisperX/whisper JSON with a 'segments' list"):
        loaders.read_transcript(str(other))


# ---------------------------------------------------------------- 5. report --truth without A/V truth


def test_report_truth_without_av_offsets_says_so_not_abstained(tmp_path, capsys):
    """Before: ``avalign report clips/ --truth truth.json`` with a truth file of text offsets only (the truth a team
    has for its transcripts) printed ``vs truth    A/V residual none answered (1 abstained)``, as if the estimator
    had abstained on clips it had no truth for; report.json's A/V residual counted them null. Now the residuals are
    taken over the clips whose truth gives the field: ``none: --truth gives no av_offset_ms``, and a text residual
    whose every clip abstained is printed (``none answered (N abstained)``) instead of left out. Oracle: the truth file
    the test wrote (no A/V entry)."""
    import json

    from avalign.cli import main
    from tests.conftest import tiny_clip

    clips = tmp_path / "clips"
    clips.mkdir()
    tiny_clip(clips / "talk.mp4", 1.0, fps=10, sample_rate=16000)
    (clips / "talk.srt").write_text("1\n00:00:00,100 --> 00:00:00,900\nHello there.\n")
    truth = tmp_path / "truth.json"
    truth.write_text(json.dumps({"clips": {"talk": {"text_offset_ms": 0.0}}}))
    out = tmp_path / "report"
    assert main(["report", str(clips), "--out", str(out), "--truth", str(truth), "--clip-pages", "0",
                 "--no-progress"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("vs truth")]
    record = json.loads((out / "report.json").read_text())
    row = record["clips"][0]
    assert row["av_offset_ms"] is None  # a tone under a test pattern: no A/V events
    assert lines[0] == "vs truth    A/V residual none: --truth gives no av_offset_ms"
    assert record["summary"]["residuals"]["av_offset_ms"]["null"] == 0
    text = record["summary"]["residuals"]["text_offset_ms"]
    if row["text_offset_ms"] is None:  # a tone is no speech: the text offset may abstain; it is said, not left out
        assert lines[1:] == ["vs truth    text residual none answered (1 abstained)"] and text["null"] == 1
    else:
        assert lines[1].startswith("vs truth    text residual median") and text["count"] == 1


# ---------------------------------------------------------------- 6. make_loader given preprocess's output directory


def test_make_loader_given_a_directory_of_shards_names_them_and_the_call(tmp_path):
    """Before: ``make_loader("out/")`` (the directory ``avalign preprocess raw/ out/`` wrote, as ``preprocess`` and
    ``report`` take it) or ``make_loader("out/*.tar")`` said ``no shard exists: 'out/' (a glob or a directory is not
    expanded: pass a brace pattern or a list of .tar files)``, without saying that shards are there or how to list
    them. Now it counts them, names the first and gives the call; the call it gives loads them. Oracle: the shards the
    test wrote."""
    import glob  # noqa: F401 - the hint's call is evaluated with it

    import pytest

    from loaders import make_loader
    from tests.conftest import tiny_clip, write_tar

    out = tmp_path / "out"
    out.mkdir()
    media = tiny_clip(tmp_path / "clip.mp4", 1.0, fps=10, sample_rate=16000)
    for k in range(2):
        write_tar(out / f"shard-{k:06d}.tar", [(f"c{k}.mp4", media), (f"c{k}.txt", b"a test pattern")])
    for given in (str(out), str(out / "*.tar")):
        with pytest.raises(FileNotFoundError) as error:
            make_loader(given, seed=0, budgets=(300, 160_000, 512))
        message = str(error.value)
        pattern = str(out / "*.tar")
        assert message == (f"no shard exists: {given!r} (a glob or a directory is not expanded; it matches 2 shard(s), "
                           f"first {str(out / 'shard-000000.tar')!r}: pass sorted(glob.glob({pattern!r})), or a brace "
                           "pattern).")
        call = message.split("pass ", 1)[1].split(", or a brace", 1)[0]
        batches = list(make_loader(eval(call), seed=0, budgets=(300, 160_000, 512)))
        assert sorted(k for b in batches for k in b.sample_keys) == ["c0", "c1"]
    with pytest.raises(FileNotFoundError, match=r"not expanded: pass a brace pattern or a list of \.tar files\)\.$"):
        make_loader(str(tmp_path / "none" / "*.tar"), seed=0)
