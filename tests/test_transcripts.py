"""read_transcript: exact times for every format, words, sniffing, source kinds and malformed input.

Expected values are written by hand next to each fixture (the oracle is the fixture text itself).
"""
from __future__ import annotations

import io
import json
import logging
import pathlib

import pytest

from avcore import Span, Transcript, Word
from loaders.transcripts import read_transcript
from loaders.errors import TranscriptError

SRT = """1
00:00:01,000 --> 00:00:02,500
<i>Hello</i> there,
general

2
00:00:03,250 --> 00:00:04,000
second cue

3
01:00:00,005 --> 01:00:01,000
late
"""

VTT = """WEBVTT
Kind: captions

NOTE a comment

intro
00:00:00.500 --> 00:00:01.750 align:start position:0%
<v Ann>first</v> line

00:01.750 --> 00:03.000
second
"""

VTT_INLINE = """WEBVTT

00:00:07.140 --> 00:00:09.990 align:start position:0%
so<00:00:07.860><c> we</c><00:00:08.250><c> begin</c>

00:00:09.990 --> 00:00:11.000
plain
"""

WHISPERX = {
    "segments": [
        {
            "start": 0.5,
            "end": 2.0,
            "text": " The year 1984 was",
            "words": [
                {"word": " The", "start": 0.5, "end": 0.7, "score": 0.9},
                {"word": "year", "start": 0.7, "end": 1.0, "score": 0.8},
                {"word": "1984"},
                {"word": "was", "start": 1.6, "end": 2.0, "score": 0.7},
            ],
        },
        {
            "start": 2.5,
            "end": 3.5,
            "text": "it 42",
            "words": [{"word": "it", "start": 2.5, "end": 2.9, "score": 0.5}, {"word": "42"}],
        },
    ],
    "word_segments": [],
}

FASTER_WHISPER = {
    "segments": [
        {
            "start": 1.0,
            "end": 2.0,
            "text": " Hi all",
            "words": [
                {"word": " Hi", "start": 1.0, "end": 1.4, "probability": 0.25},
                {"word": " all", "start": 1.4, "end": 2.0, "probability": 0.5},
            ],
        }
    ]
}

TEXTGRID_LONG = """File type = "ooTextFile"
Object class = "TextGrid"

xmin = 0
xmax = 4
tiers? <exists>
size = 2
item []:
    item [1]:
        class = "IntervalTier"
        name = "phrases"
        xmin = 0
        xmax = 4
        intervals: size = 3
        intervals [1]:
            xmin = 0
            xmax = 0.5
            text = ""
        intervals [2]:
            xmin = 0.5
            xmax = 2.25
            text = "hello world"
        intervals [3]:
            xmin = 2.25
            xmax = 4
            text = "bye"
    item [2]:
        class = "IntervalTier"
        name = "words"
        xmin = 0
        xmax = 4
        intervals: size = 4
        intervals [1]:
            xmin = 0
            xmax = 0.5
            text = ""
        intervals [2]:
            xmin = 0.5
            xmax = 1.125
            text = "hello"
        intervals [3]:
            xmin = 1.125
            xmax = 2.25
            text = "world"
        intervals [4]:
            xmin = 2.25
            xmax = 4
            text = "bye"
"""

TEXTGRID_SHORT = """File type = "ooTextFile"
Object class = "TextGrid"

0
3
<exists>
1
"IntervalTier"
"utterance"
0
3
3
0
1.5
"one two"
1.5
2
""
2
3
"three"
"""


def _times(spans):
    return [(s.text, s.start_seconds, s.stop_seconds) for s in spans]


def _word_times(words):
    return [(w.text, w.start_seconds, w.stop_seconds) for w in words]


# ------------------------------------------------------------------------------------------ formats


def test_srt_exact_times_and_text() -> None:
    t = read_transcript(SRT.encode(), name="talk.srt")
    assert t.format == "srt" and t.source == "talk.srt"
    assert _times(t.spans) == [
        ("Hello there, general", 1.0, 2.5),
        ("second cue", 3.25, 4.0),
        ("late", 3600.005, 3601.0),
    ]
    assert t.words == ()


def test_srt_spans_sorted_by_start() -> None:
    text = "1\n00:00:05,000 --> 00:00:06,000\nb\n\n2\n00:00:01,000 --> 00:00:02,000\na\n"
    t = read_transcript(text.encode(), format="srt")
    assert _times(t.spans) == [("a", 1.0, 2.0), ("b", 5.0, 6.0)]


def test_vtt_exact_times_header_note_identifier_voice() -> None:
    t = read_transcript(VTT.encode(), name="talk.vtt")
    assert t.format == "vtt"
    assert _times(t.spans) == [("first line", 0.5, 1.75), ("second", 1.75, 3.0)]
    assert t.words == ()


def test_vtt_inline_word_timestamps_become_words() -> None:
    t = read_transcript(VTT_INLINE.encode(), name="yt.vtt")
    assert _times(t.spans) == [("so we begin", 7.14, 9.99), ("plain", 9.99, 11.0)]
    # "so" runs from the cue start to the first stamp; the last word ends at the cue end.
    assert _word_times(t.spans[0].words) == [("so", 7.14, 7.86), ("we", 7.86, 8.25), ("begin", 8.25, 9.99)]
    assert t.spans[1].words == ()


def test_vtt_html_escapes_are_decoded() -> None:
    text = "WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nTom &amp; Jerry &lt;3\n"
    assert read_transcript(text.encode(), format="vtt").spans[0].text == "Tom & Jerry <3"


def test_vtt_inline_chunk_with_two_words_is_split_evenly() -> None:
    text = "WEBVTT\n\n00:00:01.000 --> 00:00:03.000\na<00:00:02.000> b c\n"
    t = read_transcript(text.encode(), format="vtt")
    assert _word_times(t.words) == [("a", 1.0, 2.0), ("b", 2.0, 2.5), ("c", 2.5, 3.0)]


def test_whisperx_json_words_scores_and_interpolation(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="loaders._transcript_formats"):
        t = read_transcript(json.dumps(WHISPERX).encode(), name="wx.json")
    assert t.format == "json"
    assert _times(t.spans) == [("The year 1984 was", 0.5, 2.0), ("it 42", 2.5, 3.5)]
    words = t.spans[0].words
    # "1984" has no stamps: it fills the gap between "year" (ends 1.0) and "was" (starts 1.6).
    assert _word_times(words) == [("The", 0.5, 0.7), ("year", 0.7, 1.0), ("1984", 1.0, 1.6), ("was", 1.6, 2.0)]
    assert [w.score for w in words] == [0.9, 0.8, None, 0.7]
    # "42" is last: it runs from "it"'s end to the segment end.
    assert _word_times(t.spans[1].words) == [("it", 2.5, 2.9), ("42", 2.9, 3.5)]
    assert "interpolated times of 2 word(s)" in caplog.text


def test_whisperx_run_of_untimed_words_shares_the_gap() -> None:
    doc = {"segments": [{"start": 0.0, "end": 4.0, "text": "a b c d", "words": [
        {"word": "a", "start": 0.0, "end": 1.0}, {"word": "b"}, {"word": "c", "start": 2.0}, {"word": "d", "start": 3.0, "end": 4.0},
    ]}]}
    t = read_transcript(json.dumps(doc).encode(), format="json")
    assert _word_times(t.words) == [("a", 0.0, 1.0), ("b", 1.0, 2.0), ("c", 2.0, 3.0), ("d", 3.0, 4.0)]


def test_faster_whisper_probability_and_leading_spaces() -> None:
    t = read_transcript(json.dumps(FASTER_WHISPER).encode(), name="fw.json")
    assert _times(t.spans) == [("Hi all", 1.0, 2.0)]
    assert t.words == (Word("Hi", 1.0, 1.4, 0.25), Word("all", 1.4, 2.0, 0.5))


def test_word_segments_attached_when_segments_have_no_words() -> None:
    doc = {
        "segments": [{"start": 0.0, "end": 1.0, "text": "a b"}, {"start": 2.0, "end": 3.0, "text": "c"}],
        "word_segments": [
            {"word": "a", "start": 0.0, "end": 0.5}, {"word": "b", "start": 0.5, "end": 1.0},
            {"word": "c", "start": 2.1, "end": 2.9},
        ],
    }
    t = read_transcript(json.dumps(doc).encode(), format="json")
    assert [len(s.words) for s in t.spans] == [2, 1]
    assert _word_times(t.spans[1].words) == [("c", 2.1, 2.9)]


def test_plain_json_list_with_end_or_stop_keys() -> None:
    doc = [{"text": "b", "start": 2, "stop": 3.5}, {"text": " a ", "start": 0.25, "end": 1}]
    t = read_transcript(json.dumps(doc).encode(), name="plain.json")
    assert _times(t.spans) == [("a", 0.25, 1.0), ("b", 2.0, 3.5)]


def test_textgrid_long_phrase_and_word_tiers() -> None:
    t = read_transcript(TEXTGRID_LONG.encode(), name="mfa.TextGrid")
    assert t.format == "textgrid"
    assert _times(t.spans) == [("hello world", 0.5, 2.25), ("bye", 2.25, 4.0)]
    assert _word_times(t.spans[0].words) == [("hello", 0.5, 1.125), ("world", 1.125, 2.25)]
    assert _word_times(t.spans[1].words) == [("bye", 2.25, 4.0)]


def test_textgrid_short_single_tier_drops_silence() -> None:
    t = read_transcript(TEXTGRID_SHORT.encode(), name="x.textgrid")
    assert _times(t.spans) == [("one two", 0.0, 1.5), ("three", 2.0, 3.0)]
    assert t.words == ()


def test_textgrid_words_only_gives_one_span_per_word() -> None:
    text = TEXTGRID_SHORT.replace('"utterance"', '"words"')
    t = read_transcript(text.encode(), format="textgrid")
    assert _times(t.spans) == [("one two", 0.0, 1.5), ("three", 2.0, 3.0)]
    assert _word_times(t.words) == [("one two", 0.0, 1.5), ("three", 2.0, 3.0)]


def test_textgrid_utf16_with_bom() -> None:
    text = TEXTGRID_SHORT.replace("three", "trois-\u00e9t\u00e9")
    t = read_transcript(text.encode("utf-16"), format="textgrid")
    assert _times(t.spans)[1] == ("trois-\u00e9t\u00e9", 2.0, 3.0)


# ------------------------------------------------------------------------------- sources and sniffing


@pytest.mark.parametrize(
    ("text", "expected"),
    [(SRT, "srt"), (VTT, "vtt"), (json.dumps(WHISPERX), "json"), (TEXTGRID_LONG, "textgrid"), (TEXTGRID_SHORT, "textgrid")],
)
def test_sniffing_without_suffix(text: str, expected: str) -> None:
    by_sniff = read_transcript(text.encode(), name="sample_key")
    by_format = read_transcript(text.encode(), format=expected)  # type: ignore[arg-type]
    assert by_sniff.format == expected
    assert by_sniff.spans == by_format.spans


def test_bare_webdataset_key_names_the_format() -> None:
    # A tar member keyed "TextGrid" with content that would sniff otherwise is still read as named.
    with pytest.raises(TranscriptError, match="key.TextGrid"):
        read_transcript(SRT.encode(), name="key.TextGrid")
    assert read_transcript(SRT.encode(), name="srt").format == "srt"


def test_bytes_path_and_file_objects_give_equal_transcripts(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "talk.vtt"
    path.write_bytes(VTT_INLINE.encode())
    from_path = read_transcript(path)
    from_str_path = read_transcript(str(path))
    from_bytes = read_transcript(VTT_INLINE.encode(), name=str(path))
    with open(path, "rb") as binary:
        from_binary = read_transcript(binary)
    with open(path, encoding="utf-8") as text:
        from_text = read_transcript(text)
    from_bytesio = read_transcript(io.BytesIO(VTT_INLINE.encode()), name=str(path))
    for other in (from_str_path, from_bytes, from_binary, from_text, from_bytesio):
        assert other == from_path
    assert from_path.source == str(path) and len(from_path.words) == 3


def test_utf8_bom_and_crlf_are_accepted() -> None:
    t = read_transcript(b"\xef\xbb\xbf" + SRT.replace("\n", "\r\n").encode(), name="bom.srt")
    assert _times(t.spans)[0] == ("Hello there, general", 1.0, 2.5)


@pytest.mark.parametrize(
    ("content", "name"),
    [(b"", "a.srt"), (b"  \n\n", "a.vtt"), (b"", "a.json"), (b"WEBVTT\n\n", "a.vtt"), (b"[]", "a.json"),
     (b'{"segments": []}', "a.json"), (b"", "no_suffix")],
)
def test_empty_inputs_give_empty_transcripts(content: bytes, name: str) -> None:
    t = read_transcript(content, name=name)
    assert isinstance(t, Transcript) and t.spans == () and t.source == name


def test_invalid_format_argument_lists_valid_values() -> None:
    with pytest.raises(ValueError, match=r"\['srt', 'vtt', 'json', 'textgrid', 'stm'\].*'ass'"):
        read_transcript(SRT.encode(), format="ass")  # type: ignore[arg-type]


def test_unsupported_source_type() -> None:
    with pytest.raises(TypeError, match="int"):
        read_transcript(42)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------ malformed


@pytest.mark.parametrize(
    ("content", "fmt", "match"),
    [
        # SRT
        ("1\n00:00:01,000 --> 00:00:0x,000\nhi\n", "srt", r"bad\.srt: line 2: malformed SRT timing"),
        ("1\n00:00:03,000 --> 00:00:02,000\nhi\n", "srt", r"bad\.srt: line 2: .*ends before it starts"),
        ("just some words\nno cues\n", "srt", r"bad\.srt: no SRT cues"),
        # WebVTT
        ("WEBVTT\n\n00:00:01.000 --> 00:00:0x.000\nhi\n", "vtt", r"bad\.vtt: line 3: malformed WebVTT timing"),
        ("WEBVTT\n\n00:00:01.000 --> 00:00:61.000\nhi\n", "vtt", r"bad\.vtt: line 3: bad timestamp"),
        ("00:00:01.000 --> 00:00:02.000\nhi\n", "vtt", r"bad\.vtt: line 1: WebVTT must start with 'WEBVTT'"),
        ("WEBVTT\n\n00:00:05.000 --> 00:00:04.000\nhi\n", "vtt", r"bad\.vtt: line 3: .*ends before it starts"),
        ("WEBVTT\n\n00:00:01.000 --> 00:00:02.000\na<00:00:03.000> b\n", "vtt", r"bad\.vtt: line 3: inline timestamp"),
        ("WEBVTT\n\n00:00:01.000 --> 00:00:04.000\na<00:00:03.000> b<00:00:02.000> c\n", "vtt", r"line 3: inline.*increase"),
        # JSON
        ('{"segments": [', "json", r"bad\.json: line 1 column \d+: invalid JSON"),
        ('{"text": "x"}', "json", r"bad\.json: segments: missing"),
        ('{"segments": {"a": 1}}', "json", r"segments: expected a list"),
        ('{"segments": [{"start": 0, "end": 1, "text": "a"}, {"start": 1, "text": "b"}]}', "json", r"segments\[1\]\.end: missing"),
        ('{"segments": [{"start": "0.5", "end": 1, "text": "a"}]}', "json", r"segments\[0\]\.start: expected a number.*'0\.5'"),
        ('{"segments": [{"start": -1, "end": 1, "text": "a"}]}', "json", r"segments\[0\]\.start: time must be >= 0.*-1"),
        ('{"segments": [{"start": NaN, "end": 1, "text": "a"}]}', "json", r"segments\[0\]\.start: time must be finite"),
        ('{"segments": [{"start": 0, "end": Infinity, "text": "a"}]}', "json", r"segments\[0\]\.end: time must be finite"),
        ('{"segments": [{"start": 2, "end": 1, "text": "a"}]}', "json", r"segments\[0\]: span 'a' ends before it starts"),
        ('{"segments": [{"start": 0, "end": 9, "text": "a", "words": [{"word": "a", "start": 0, "end": 1},'
         ' {"word": "b", "start": 1, "end": 2}, {"word": "c", "start": 3, "end": 2.5}]}]}', "json",
         r"segments\[0\]\.words\[2\]: word 'c' ends before it starts"),
        ('{"segments": [{"start": 0, "end": 1, "text": "a", "words": [{"start": 0, "end": 1}]}]}', "json",
         r"segments\[0\]\.words\[0\]: missing 'word'"),
        ('{"segments": [{"start": 0, "end": 1, "text": "a", "words": [{"word": "a", "start": 0, "end": 1, "score": "hi"}]}]}',
         "json", r"words\[0\]\.score: expected a finite number"),
        ('[{"text": "a", "start": 0, "end": 1}, 7]', "json", r"bad\.json: \[1\]: expected an object"),
        ('"hello"', "json", r"bad\.json: expected a JSON object"),
        ('[{"start": 1%s, "end": 2, "text": "a"}]' % ("0" * 5000), "json", r"bad\.json: invalid JSON number"),
        ("[" * 100_000 + "]" * 100_000, "json", r"bad\.json: JSON nested too deeply"),
        ('{"segments": [{"start": 0, "end": 1, "text": "a", "words": [{"word": "a", "start": 0, "end": 1, "score": 1e999}]}]}',
         "json", r"words\[0\]\.score: expected a finite number"),
        ('{"segments": [{"start": 0, "end": 1, "text": "a", "words": [{"word": "a", "start": 0, "end": 1, "score": 1%s}]}]}' % ("0" * 400),
         "json", r"words\[0\]\.score: expected a finite number"),
        ('{"segments": [{"start": 1%s, "end": 1, "text": "a"}]}' % ("0" * 400), "json", r"segments\[0\]\.start: time must be finite"),
        ('{"segments": [{"start": 0, "end": 1, "text": 5}]}', "json", r"segments\[0\]\.text: expected a string"),
        # TextGrid
        ("File type = \"ooTextFile\"\nObject class = \"TextGrid\"\n\nxmin = 0\nxmax = oops\n", "textgrid",
         r"bad\.textgrid: line 5: xmax must be a number, got 'oops'"),
        ("File type = \"ooTextFile\"\nObject class = \"TextGrid\"\n\nxmin = 0\nxmax = 3\ntiers? <exists>\nsize = 1\n",
         "textgrid", r"bad\.textgrid: praatio could not read the TextGrid"),
        ("not a textgrid at all", "textgrid", r"bad\.textgrid: line 1: not a Praat TextGrid"),
        (TEXTGRID_SHORT.replace("2\n3\n\"three\"", "3\n2\n\"three\""), "textgrid",
         r"bad\.textgrid: tier 'utterance' interval \d+: span 'three' ends before it starts"),
        (TEXTGRID_LONG.replace("xmax = 1.125", "xmax = 1.125e"), "textgrid", r"bad\.textgrid: line 39: xmax must be a number, got '1\.125e'"),
        (TEXTGRID_SHORT.replace("\n2\n3\n", "\n2\n-3\n"), "textgrid", r"tier 'utterance' interval 3\.xmax: time must be >= 0"),
    ],
)
def test_malformed_inputs_name_file_and_field(content: str, fmt: str, match: str) -> None:
    with pytest.raises(TranscriptError, match=match):
        read_transcript(content.encode(), name=f"bad.{fmt}")


def test_error_names_the_path(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"segments": [{"start": 0, "end": 1, "text": "a", "words": [{"word": "a", "start": 0, "end": -2}]}]}')
    with pytest.raises(TranscriptError, match=r"broken\.json: segments\[0\]\.words\[0\]\.end: time must be >= 0"):
        read_transcript(path)


def test_undecodable_bytes_raise_transcript_error() -> None:
    # UTF-8 with one broken byte (0xe9 after a valid "é"): refused, not read as cp1252 (which a file of cp1252
    # bytes only is: tests/test_cli_user_round39.py).
    content = "1\n00:00:01,000 --> 00:00:02,000\ncaf\u00e9 ".encode() + b"\xe9\n"
    with pytest.raises(TranscriptError, match=r"broken\.srt: byte 38: cannot decode as utf-8 .*hint: it is UTF-8 with "
                                              r"1 broken byte \(at byte 38; .*not read as cp1252: .*re-save the "
                                              r"transcript as UTF-8"):
        read_transcript(content, name="broken.srt")


def test_unknown_content_without_suffix() -> None:
    # text with no time stamps: no format= makes it a transcript, so the hint says what does (round 63)
    with pytest.raises(TranscriptError, match=r"<bytes>: cannot tell the transcript format.*no time stamps"):
        read_transcript(b"hello world")
    with pytest.raises(TranscriptError, match=r"<bytes>: cannot tell the transcript format.*format= one of"):
        read_transcript(b"00:00:01.000 00:00:02.000 hello world")


def test_wrong_suffix_hints_at_the_sniffed_format() -> None:
    with pytest.raises(TranscriptError, match=r"looks like json, pass format='json'"):
        read_transcript(json.dumps(WHISPERX).encode(), name="mislabelled.srt")


def test_missing_file_raises_oserror(tmp_path: pathlib.Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_transcript(tmp_path / "nope.srt")


# -------------------------------------------------------------------------------- sample data vs truth

_SAMPLE_DATA = pathlib.Path(__file__).resolve().parent.parent / "sample_data"
_TRUTH = _SAMPLE_DATA / "truth.json"
_TRANSCRIPT_SUFFIXES = (".srt", ".vtt", ".json", ".TextGrid", ".textgrid")
# Stamps are written to the millisecond: allow one millisecond (rounding or truncation) plus float slack.
_STAMP_TOLERANCE_SECONDS = 1e-3 + 1e-9


def _truth_transcript_paths(key: str, entry: dict) -> list[pathlib.Path]:
    """Transcript files of a clip: listed in truth (``transcripts`` list/dict or ``transcript``), else ``KEY.*``."""
    listed = entry.get("transcripts", entry.get("transcript", []))
    if isinstance(listed, str):
        listed = [listed]
    elif isinstance(listed, dict):
        listed = list(listed.values())
    paths = [_SAMPLE_DATA / p for p in listed if isinstance(p, str)]
    if not paths:
        paths = [p for p in sorted(_SAMPLE_DATA.glob(f"{key}.*")) if p.suffix in _TRANSCRIPT_SUFFIXES and p.name != "truth.json"]
    return paths


def _normalize(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


@pytest.mark.skipif(not _TRUTH.exists(), reason="sample_data/truth.json not generated yet")
def test_committed_transcripts_match_truth() -> None:
    """Each committed transcript's stamps equal the generator's truth mapped onto the transcript clock.

    Truth words are on the video timeline; the transcript stamps them at
    ``t * (1 + drift_ppm * 1e-6) + av_offset_ms / 1000 + text_offset_ms / 1000``. With word times the
    words must match one to one; caption formats without words must cover every truth word with a span.
    """
    document = json.loads(_TRUTH.read_text())
    clips = document.get("clips", document) if isinstance(document, dict) else {}
    checked = 0
    for key, entry in clips.items():
        if not isinstance(entry, dict) or not entry.get("words"):
            continue
        scale = 1.0 + float(entry.get("drift_ppm") or 0.0) * 1e-6
        offset = (float(entry.get("av_offset_ms") or 0.0) + float(entry.get("text_offset_ms") or 0.0)) / 1000.0
        want = [
            (
                w.get("text", w.get("word", "")),
                float(w.get("start_seconds", w.get("start"))) * scale + offset,
                float(w.get("stop_seconds", w.get("end", w.get("stop")))) * scale + offset,
            )
            for w in entry["words"]
        ]
        for path in _truth_transcript_paths(key, entry):
            t = read_transcript(path)
            if t.words:
                got = _word_times(t.words)
                assert len(got) == len(want), f"{path.name}: {len(got)} words, truth has {len(want)}"
                for (g_text, g_start, g_stop), (w_text, w_start, w_stop) in zip(got, want):
                    assert _normalize(g_text) == _normalize(w_text), (path.name, g_text, w_text)
                    assert abs(g_start - w_start) <= _STAMP_TOLERANCE_SECONDS, (path.name, g_text, g_start, w_start)
                    assert abs(g_stop - w_stop) <= _STAMP_TOLERANCE_SECONDS, (path.name, g_text, g_stop, w_stop)
            else:
                assert t.spans, f"{path.name}: no spans"
                for w_text, w_start, w_stop in want:
                    assert any(
                        s.start_seconds - _STAMP_TOLERANCE_SECONDS <= w_start
                        and w_stop <= s.stop_seconds + _STAMP_TOLERANCE_SECONDS
                        for s in t.spans
                    ), f"{path.name}: truth word {w_text!r} [{w_start:.3f}, {w_stop:.3f}) lies in no span"
            checked += 1
    assert checked > 0, (
        f"{_TRUTH}: no clip has both 'words' ({{text, start_seconds, stop_seconds}}) and a transcript file "
        "(listed under 'transcripts' or named KEY.srt/.vtt/.json/.TextGrid)"
    )


def test_records_reject_stop_before_start_directly() -> None:
    """The wrapper relies on Word/Span raising ValueError; pin that contract."""
    with pytest.raises(ValueError, match="ends before it starts"):
        Span("x", 2.0, 1.0)


def test_avalign_normalised_json_round_trips():
    """The ``transcript.json`` that ``avalign preprocess`` writes reads back to the same spans and words."""
    doc = (
        b'{"spans":[{"start_seconds":1.013,"stop_seconds":2.508,"text":"Maps show","words":['
        b'{"score":0.95,"start_seconds":1.013,"stop_seconds":1.427,"text":"Maps"},'
        b'{"start_seconds":1.427,"stop_seconds":2.508,"text":"show"}]}]}'
    )
    t = read_transcript(doc, format="json", name="k.transcript.json")
    assert [(s.text, s.start_seconds, s.stop_seconds) for s in t.spans] == [("Maps show", 1.013, 2.508)]
    assert [(w.text, w.start_seconds, w.stop_seconds, w.score) for w in t.words] == [
        ("Maps", 1.013, 1.427, 0.95),
        ("show", 1.427, 2.508, None),
    ]


def test_is_transcript_json_tells_metadata_from_transcripts():
    from loaders.transcripts import is_transcript_json

    assert is_transcript_json(b'{"segments": []}')
    assert is_transcript_json(b'{"spans": [{"text": "a", "start_seconds": 0, "stop_seconds": 1}]}')
    assert is_transcript_json(b'[{"text": "a", "start": 0, "end": 1}]')
    assert is_transcript_json(b"{not json")  # malformed: the reader will name the line
    # video2dataset's per-sample metadata
    assert not is_transcript_json(b'{"url": "http://x/v.mp4", "key": "000000001", "status": "success", "caption": "hi"}')
    assert not is_transcript_json(b'[{"text": "a"}]')


def test_pick_transcript_one_choice_for_every_tool():
    from loaders.transcripts import pick_transcript

    meta = b'{"url": "http://x/v.mp4", "status": "success"}'
    whisper = b'{"segments": []}'
    pick = lambda sample: pick_transcript(sample, sample.__getitem__)  # noqa: E731
    assert pick({"mp4": b"", "srt": b"", "json": meta}) == "srt"  # metadata json is passed over
    assert pick({"mp4": b"", "srt": b"", "json": whisper}) == "json"  # word-capable format first
    assert pick({"transcript.json": b"{}", "json": whisper, "vtt": b""}) == "transcript.json"
    assert pick({"textgrid": b"", "vtt": b"", "srt": b""}) == "textgrid"
    assert pick({"mp4": b"", "json": meta}) is None


TEXTGRID_POINTS_ONLY = """File type = "ooTextFile"
Object class = "TextGrid"

xmin = 0
xmax = 3
tiers? <exists>
size = 1
item []:
    item [1]:
        class = "TextTier"
        name = "events"
        xmin = 0
        xmax = 3
        points: size = 2
        points [1]:
            number = 0.5
            mark = "beep"
        points [2]:
            number = 2.25
            mark = "clap"
"""


def test_textgrid_with_point_tiers_only_says_why_it_has_no_spans(caplog) -> None:
    # Before: "praatio could not read the TextGrid ... entry ('0.5', 'beep') is not (xmin, xmax, text)".
    with caplog.at_level(logging.WARNING, logger="loaders"):
        t = read_transcript(TEXTGRID_POINTS_ONLY.encode(), name="marks.TextGrid")
    assert t.spans == () or list(t.spans) == []
    assert "marks.TextGrid: no interval tier, only point tier(s) 'events': no spans read" in caplog.text


def test_textgrid_with_a_point_tier_beside_its_word_tier_reads_the_words() -> None:
    # Praat annotations often carry a point tier (tones, events) beside the interval tiers. Before, any point tier
    # made the whole TextGrid unreadable (its (time, mark) entries were checked as intervals).
    item = TEXTGRID_POINTS_ONLY.split("item []:")[1].replace("item [1]:", "item [2]:")
    words = """    item [1]:
        class = "IntervalTier"
        name = "words"
        xmin = 0
        xmax = 3
        intervals: size = 2
        intervals [1]:
            xmin = 0
            xmax = 1.25
            text = "hello"
        intervals [2]:
            xmin = 1.25
            xmax = 3
            text = "world"
"""
    text = TEXTGRID_POINTS_ONLY.split("size = 1")[0] + "size = 2\nitem []:\n" + words + item.lstrip("\n")
    t = read_transcript(text.encode(), name="mixed.TextGrid")
    assert [(w.text, w.start_seconds, w.stop_seconds) for w in t.words] == [("hello", 0.0, 1.25), ("world", 1.25, 3.0)]


def test_a_missing_path_is_file_not_found_for_every_reader(tmp_path):
    """README: a path that does not exist raises FileNotFoundError (not DecodeError / TranscriptError), naming it."""
    import loaders

    for reader, name in ((loaders.read_video, "gone.mp4"), (loaders.read_audio, "gone.m4a"),
                         (loaders.read_transcript, "gone.srt")):
        with pytest.raises(FileNotFoundError, match="gone"):
            reader(str(tmp_path / name))
