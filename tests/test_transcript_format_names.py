"""``format=`` / ``--transcript-format`` take the names files and tools use (``TextGrid``, ``SRT``, ``WebVTT``): before,
``read_transcript(format="TextGrid")`` of a ``KEY.TextGrid`` member was refused ("format must be one of […,
'textgrid', …]") and so was ``--transcript-format TextGrid``. Oracle: the same file read with the lower-case name."""
from __future__ import annotations

import json

import pytest

from avalign.cli import main
from loaders import read_transcript
from tests.conftest import tiny_clip

_TEXTGRID = """File type = "ooTextFile"
Object class = "TextGrid"

xmin = 0
xmax = 2
tiers? <exists>
size = 1
item []:
    item [1]:
        class = "IntervalTier"
        name = "words"
        xmin = 0
        xmax = 2
        intervals: size = 3
        intervals [1]:
            xmin = 0
            xmax = 0.4
            text = ""
        intervals [2]:
            xmin = 0.4
            xmax = 0.9
            text = "hello"
        intervals [3]:
            xmin = 0.9
            xmax = 2
            text = "world"
"""
_VTT = "WEBVTT\n\n00:00:00.400 --> 00:00:01.900\nhello world\n"


@pytest.mark.parametrize("name, text, lower", [("TextGrid", _TEXTGRID, "textgrid"), ("TEXTGRID", _TEXTGRID, "textgrid"),
                                               ("WebVTT", _VTT, "vtt"), ("VTT", _VTT, "vtt")])
def test_format_in_any_case(name, text, lower):
    expected = read_transcript(text.encode(), format=lower, name="member")
    got = read_transcript(text.encode(), format=name, name="member")
    assert got.spans == expected.spans and got.words == expected.words and got.spans


def test_an_unknown_format_is_still_refused_by_name():
    with pytest.raises(ValueError, match=r"format must be one of .* got 'ass'"):
        read_transcript(_VTT.encode(), format="ass")


def test_measure_takes_transcript_format_in_any_case(tmp_path, capsys):
    clip = tmp_path / "c.mp4"
    tiny_clip(clip, 2.0, fps=10, sample_rate=16000)
    transcript = tmp_path / "words.txt"  # a name that does not tell the format
    transcript.write_text(_TEXTGRID)
    assert main(["measure", str(clip), "--transcript", str(transcript), "--transcript-format", "TextGrid", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [w["text"] for w in out["words"]] == ["hello", "world"]
