"""read_transcript on transcripts as ASR tools and caption services write them (BENCHMARKS.md, "Transcripts as real
ASR and subtitle files come"): roll-up captions (YouTube's automatic WebVTT, CEA-608 roll-up SRT) and OpenAI's
``verbose_json`` with word timestamps. Expected values are the fixture's own stamps.
"""
from __future__ import annotations

import json

import pytest

from loaders.transcripts import is_transcript_json, read_transcript
from loaders.errors import TranscriptError

# YouTube's automatic captions as yt-dlp saves them: each cue shows the previous line above the new one (karaoke
# stamps on the new one), and a 10 ms cue shows the finished line alone.
YOUTUBE_VTT = """WEBVTT
Kind: captions
Language: en

00:00:01.000 --> 00:00:02.990 align:start position:0%
 
seven<00:00:01.400><c> bright</c><00:00:01.700><c> lamps</c>

00:00:02.990 --> 00:00:03.000 align:start position:0%
seven bright lamps
 

00:00:03.000 --> 00:00:05.000 align:start position:0%
seven bright lamps
glow<00:00:03.300><c> above</c><00:00:03.700><c> quiet</c><00:00:04.100><c> harbors</c>

00:00:05.000 --> 00:00:05.010 align:start position:0%
glow above quiet harbors
 
"""


def _words(transcript):
    return [(w.text, round(w.start_seconds, 3), round(w.stop_seconds, 3)) for w in transcript.words]


def test_youtube_rollup_vtt_reads_each_word_once_at_its_stamp():
    t = read_transcript(YOUTUBE_VTT.encode(), name="yt.en.vtt")
    assert [(s.text, s.start_seconds, s.stop_seconds) for s in t.spans] == [
        ("seven bright lamps", 1.0, 2.99), ("glow above quiet harbors", 3.0, 5.0)]
    assert _words(t) == [("seven", 1.0, 1.4), ("bright", 1.4, 1.7), ("lamps", 1.7, 2.99),
                         ("glow", 3.0, 3.3), ("above", 3.3, 3.7), ("quiet", 3.7, 4.1), ("harbors", 4.1, 5.0)]


def test_rollup_srt_keeps_only_the_new_line():
    srt = ("1\n00:00:01,000 --> 00:00:03,000\nTHE FIRST LINE\n\n"
           "2\n00:00:03,000 --> 00:00:05,000\nTHE FIRST LINE\nTHE SECOND LINE\n\n"
           "3\n00:00:05,000 --> 00:00:07,000\nTHE SECOND LINE\nAND A THIRD\n")
    t = read_transcript(srt.encode(), name="rollup.srt")
    assert [(s.text, s.start_seconds, s.stop_seconds) for s in t.spans] == [
        ("THE FIRST LINE", 1.0, 3.0), ("THE SECOND LINE", 3.0, 5.0), ("AND A THIRD", 5.0, 7.0)]


@pytest.mark.parametrize("text, expected", [
    # one-line cues that say the same thing twice: both are speech
    ("1\n00:00:01,000 --> 00:00:02,000\nNo!\n\n2\n00:00:02,000 --> 00:00:03,000\nNo!\n", ["No!", "No!"]),
    # a repeated line after a pause (the next cue starts 0.5 s after the previous ends): not the previous cue on screen
    ("1\n00:00:01,000 --> 00:00:02,000\nHello\n\n2\n00:00:02,500 --> 00:00:03,000\nHello\nagain\n",
     ["Hello", "Hello again"]),
    # the previous cue's last line repeated lower down (not leading): kept
    ("1\n00:00:01,000 --> 00:00:02,000\nHello\n\n2\n00:00:02,000 --> 00:00:03,000\nwell\nHello\n",
     ["Hello", "well Hello"]),
])
def test_repeated_text_that_is_not_rollup_is_kept(text, expected):
    assert [s.text for s in read_transcript(text.encode(), name="a.srt").spans] == expected


OPENAI_WORDS = {"task": "transcribe", "language": "english", "duration": 4.0, "text": "Hello big world.",
                "words": [{"word": "Hello", "start": 1.0, "end": 1.4}, {"word": "big", "start": 1.5, "end": 1.8},
                          {"word": "world", "start": 1.9, "end": 2.5}]}


def test_openai_verbose_json_words_only():
    data = json.dumps(OPENAI_WORDS).encode()
    assert is_transcript_json(data)
    t = read_transcript(data, name="a.json")
    assert _words(t) == [("Hello", 1.0, 1.4), ("big", 1.5, 1.8), ("world", 1.9, 2.5)]


def test_openai_verbose_json_segments_get_the_top_level_words():
    doc = dict(OPENAI_WORDS, segments=[{"id": 0, "start": 1.0, "end": 2.5, "text": " Hello big world.",
                                        "no_speech_prob": 0.01}])
    t = read_transcript(json.dumps(doc).encode(), name="a.json")
    assert [(s.text, s.start_seconds, s.stop_seconds) for s in t.spans] == [("Hello big world.", 1.0, 2.5)]
    assert _words(t) == [("Hello", 1.0, 1.4), ("big", 1.5, 1.8), ("world", 1.9, 2.5)]


def test_openai_words_errors_name_the_key_and_metadata_words_are_not_a_transcript():
    doc = dict(OPENAI_WORDS, words=[{"word": "Hello", "start": "1.0", "end": 1.4}])
    with pytest.raises(TranscriptError, match=r"a\.json: words\[0\]\.start: expected a number of seconds, got '1\.0'"):
        read_transcript(json.dumps(doc).encode(), name="a.json")
    assert not is_transcript_json(json.dumps({"url": "u", "key": "0001", "words": ["tag", "cat"]}).encode())


_ROLLUP_AFTER_PAUSE_VTT = """WEBVTT
Kind: captions
Language: en

00:00:01.000 --> 00:00:02.990 align:start position:0%
 
seven<00:00:01.400><c> bright</c><00:00:01.900><c> lamps</c>

00:00:02.990 --> 00:00:03.000 align:start position:0%
seven bright lamps
 

00:00:04.200 --> 00:00:06.000 align:start position:0%
seven bright lamps
glow<00:00:04.700><c> above</c><00:00:05.100><c> quiet</c><00:00:05.500><c> harbors</c>

00:00:06.000 --> 00:00:06.010 align:start position:0%
glow above quiet harbors
 

00:00:09.000 --> 00:00:10.000 align:start position:0%
glow above quiet harbors
again
"""


@pytest.mark.parametrize("convert", [False, True])
def test_youtube_rollup_after_a_pause_reads_each_word_once(convert):
    """After a pause in the speech, YouTube's next cue starts later than the 10 ms snapshot before it, still carrying
    the line on screen; the roll-up rule asked for abutting cues and read that line twice (user64: 32 words for 18).
    A cue right after a dropped snapshot now carries its lines whatever the gap. Oracle: the fixture's words and
    inline stamps; the SRT that ``yt-dlp --convert-subs srt`` (FFmpeg) writes from it reads the same text."""
    import subprocess

    text = _ROLLUP_AFTER_PAUSE_VTT
    if convert:
        text = subprocess.run(["ffmpeg", "-v", "error", "-f", "webvtt", "-i", "-", "-f", "srt", "-"],
                              input=text.encode(), capture_output=True, check=True).stdout.decode()
    t = read_transcript(text.encode(), name="yt.en.srt" if convert else "yt.en.vtt")
    assert [s.text for s in t.spans] == ["seven bright lamps", "glow above quiet harbors", "again"]
    if not convert:
        assert [(w.text, w.start_seconds) for w in t.words] == [
            ("seven", 1.0), ("bright", 1.4), ("lamps", 1.9), ("glow", 4.2), ("above", 4.7), ("quiet", 5.1),
            ("harbors", 5.5)]  # the last cue has no inline stamps: no word times
