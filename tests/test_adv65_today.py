"""adv65: adversarial round on the fifteenth session's merges (BENCHMARKS.md, "adv65").

Each test asserts against an oracle and failed before its fix.
"""
from __future__ import annotations

import pytest

from loaders import read_audio
from loaders.errors import DecodeError
from tests.conftest import encode_once


@pytest.mark.parametrize("suffix", [".mkv", ".webm"])
def test_seeked_window_past_the_end_of_vorbis_is_outside_the_audio_not_an_empty_track(tmp_path, suffix):
    """A window that starts over a second past the end of a Vorbis track in Matroska/WebM was refused as 'the audio
    stream holds no samples (an empty track)' (DecodeError, reason missing_audio: the loader's video-only clip), as the
    one packet the seek lands on gives no samples. Oracle: the whole read's span, which the IndexError names."""
    path = tmp_path / f"vorbis{suffix}"
    encode_once(path, "-f", "lavfi", "-i", "anoisesrc=d=2.5:c=pink:seed=7:r=48000", "-c:a", "libvorbis")
    whole = read_audio(path, backend="pyav")
    end_seconds = whole.start_seconds + whole.samples.shape[1] / whole.sample_rate
    assert 2.49 < end_seconds < 2.52
    for backend, start, stop in (("pyav", 4.0, 5.0), ("auto", 9.5, None)):
        try:
            read_audio(path, start_seconds=start, stop_seconds=stop, backend=backend)
        except DecodeError as e:
            pytest.fail(f"{backend} [{start}, {stop}): DecodeError({e.reason}): {e}")
        except IndexError as e:
            assert "outside the audio" in str(e) and f"{end_seconds:.6f}) s" in str(e), str(e)
        else:
            pytest.fail("a window past the end was not refused")


def test_measure_note_for_a_leading_dash_name_gives_a_command_that_runs(tmp_path, monkeypatch, capsys):
    """``measure -- -talk.mp4`` noted `avalign measure -talk.mp4 --transcript -talk.srt`, which argparse refuses
    ('--transcript: expected one argument'). Oracle: the noted command, run as given, reads the transcript."""
    import json
    import re
    import shlex

    from avalign.cli import main
    from tests.conftest import tiny_clip

    monkeypatch.chdir(tmp_path)
    tiny_clip(tmp_path / "-talk.mp4", 1.0, fps=10, sample_rate=16000)
    (tmp_path / "-talk.srt").write_text("1\n00:00:00,100 --> 00:00:00,900\nHello there.\n")
    assert main(["measure", "--json", "--", "-talk.mp4"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["transcript"] is None
    commands = re.findall(r"`(avalign measure [^`]*)`", err)
    assert len(commands) == 1, err
    args = shlex.split(commands[0])[1:] + ["--json"]
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["transcript"] == "./-talk.srt"


def _textgrid(tiers: list[tuple[str, list[tuple[float, float, str]]]]) -> str:
    """A long-format TextGrid of interval tiers spanning [0, 3] s."""
    lines = ['File type = "ooTextFile"', 'Object class = "TextGrid"', "", "xmin = 0", "xmax = 3", "tiers? <exists>",
             f"size = {len(tiers)}", "item []:"]
    for k, (name, intervals) in enumerate(tiers, 1):
        lines += [f"    item [{k}]:", '        class = "IntervalTier"', f'        name = "{name}"', "        xmin = 0",
                  "        xmax = 3", f"        intervals: size = {len(intervals)}"]
        for j, (a, b, text) in enumerate(intervals, 1):
            lines += [f"        intervals [{j}]:", f"            xmin = {a}", f"            xmax = {b}",
                      f'            text = "{text}"']
    return "\n".join(lines) + "\n"


def test_textgrid_speaker_tiers_named_richard_or_charlotte_are_read_not_taken_for_phone_tiers(tmp_path):
    """Tier names were matched against the phone hints as substrings: speaker tiers 'Richard' and 'Charlotte' hold
    'char', so a TextGrid of those gave no spans ('only phone tier(s)'). Oracle: the first tier's intervals, as read
    before phone tiers were left out; a tier named 'phones' alone still gives none."""
    from loaders import read_transcript

    speakers = tmp_path / "speakers.TextGrid"
    speakers.write_text(_textgrid([("Richard", [(0, 1.2, "hello there"), (1.2, 3, "")]),
                                   ("Charlotte", [(0, 1.5, ""), (1.5, 3, "good morning")])]))
    spans = read_transcript(speakers).spans
    assert [(s.text, s.start_seconds, s.stop_seconds) for s in spans] == [("hello there", 0.0, 1.2)]
    phones = tmp_path / "phones.TextGrid"
    phones.write_text(_textgrid([("phones", [(0, 0.1, "HH"), (0.1, 0.3, "AH0")])]))
    assert read_transcript(phones).spans == ()


def test_a_top_level_list_of_word_objects_is_read_as_words_not_as_empty_segments():
    """faster-whisper's words dumped as objects (``[w._asdict() for s in segments for w in s.words]``) were read as
    segments without text: one empty span per word, the words lost, no warning. Oracle: the same words under OpenAI's
    top-level 'words' key, which was read as words grouped into sentences."""
    import json

    from loaders import read_transcript

    words = [{"start": 0.5, "end": 1.0, "word": " Hello", "probability": 0.9},
             {"start": 1.0, "end": 1.4, "word": " world.", "probability": 0.8},
             {"start": 3.0, "end": 3.5, "word": " Again.", "probability": 0.7}]

    def spans(document):
        return [(s.text, s.start_seconds, s.stop_seconds, [(w.text, w.start_seconds, w.stop_seconds, w.score)
                                                            for w in s.words])
                for s in read_transcript(json.dumps(document).encode(), name="talk.json").spans]

    expected = spans({"words": words})
    assert [w[0] for s in expected for w in s[3]] == ["Hello", "world.", "Again."]
    assert spans(words) == expected


def test_a_seeked_window_of_an_empty_vorbis_track_is_missing_audio_as_the_whole_read_says(tmp_path):
    """An MKV whose Vorbis track holds no packet: the whole read is ``missing_audio`` (a video-only clip to the loader),
    but a window from 2.5 s raised 'audio decode failed: Operation not permitted' (``decode``: the demuxer refuses a
    seek on a track with no index). Oracle: the whole read's reason."""
    path = tmp_path / "empty_audio.mkv"
    encode_once(path, "-f", "lavfi", "-i", "testsrc=size=32x24:rate=10:d=4", "-f", "lavfi", "-i",
                "anoisesrc=d=4:r=48000", "-map", "0", "-map", "1", "-c:v", "libx264", "-c:a", "libvorbis", "-af",
                "atrim=end_sample=0")
    with pytest.raises(DecodeError) as whole:
        read_audio(path)
    assert whole.value.reason == "missing_audio"
    with pytest.raises(DecodeError) as window:
        read_audio(path, start_seconds=2.5, stop_seconds=3.0)
    assert window.value.reason == whole.value.reason, str(window.value)
