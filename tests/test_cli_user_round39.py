"""A user's defects (round 39): each test reads what the user had (a hand-written document whose times, words and
bytes the test knows) and checks what avalign makes of it against those."""
from __future__ import annotations

import json
import logging

import pytest

from tests.conftest import REPO, write_tar

SAMPLE = REPO / "sample_data"

# ---------------------------------------------------------------- 1. word-level ASR JSON (HF, whisper.cpp -ojf)

# The Hugging Face ASR pipeline with return_timestamps="word": one chunk per word (leading space, punctuation kept),
# the last one left open (end null) because the audio ends inside it.
HF_WORDS = {"text": " Jack found golden keys, under soft moss.", "chunks": [
    {"text": " Jack", "timestamp": [0.56, 0.84]}, {"text": " found", "timestamp": [0.84, 1.2]},
    {"text": " golden", "timestamp": [1.2, 1.5]}, {"text": " keys,", "timestamp": [1.5, 1.92]},
    {"text": " under", "timestamp": [1.92, 2.2]}, {"text": " soft", "timestamp": [2.2, 2.5]},
    {"text": " moss.", "timestamp": [2.6, None]}]}
HF_WORD_TIMES = [("Jack", 0.56, 0.84), ("found", 0.84, 1.2), ("golden", 1.2, 1.5), ("keys,", 1.5, 1.92),
                 ("under", 1.92, 2.2), ("soft", 2.2, 2.5), ("moss.", 2.6, 2.6 + 0.3)]  # median of the six: 0.3 s


def _cpp_token(text: str, from_ms: int, to_ms: int, p: float = 0.9) -> dict:
    """A token as whisper.cpp's ``output_json(full=true)`` writes it (examples/cli/cli.cpp)."""
    def stamp(ms: int) -> str:
        return f"00:00:{ms // 1000:02d},{ms % 1000:03d}"
    return {"text": text, "timestamps": {"from": stamp(from_ms), "to": stamp(to_ms)},
            "offsets": {"from": from_ms, "to": to_ms}, "id": 1000 + from_ms, "p": p, "t_dtw": -1}


# whisper-cli -ojf: segments with their tokens (special tokens, word pieces, punctuation as tokens of their own).
CPP_FULL = {"systeminfo": "AVX = 1", "model": {"type": "base"}, "params": {"model": "ggml-base.en.bin"},
            "result": {"language": "en"}, "transcription": [
    {"timestamps": {"from": "00:00:00,500", "to": "00:00:01,920"}, "offsets": {"from": 500, "to": 1920},
     "text": " Jack found golden keys,", "tokens": [
        _cpp_token("[_BEG_]", 500, 500), _cpp_token(" Jack", 560, 840, 0.8), _cpp_token(" fo", 840, 1000, 0.6),
        _cpp_token("und", 1000, 1200, 1.0), _cpp_token(" golden", 1200, 1500), _cpp_token(" keys", 1500, 1880),
        _cpp_token(",", 1880, 1920), _cpp_token("[_TT_71]", 1920, 1920)]},
    {"timestamps": {"from": "00:00:01,920", "to": "00:00:02,950"}, "offsets": {"from": 1920, "to": 2950},
     "text": " \"under soft moss.\"", "tokens": [
        _cpp_token("[_BEG_]", 1920, 1920), _cpp_token(" \"", 1920, 1930), _cpp_token("under", 1930, 2200),
        _cpp_token(" soft", 2200, 2500), _cpp_token(" moss", 2600, 2900), _cpp_token(".\"", 2900, 2950),
        {"text": "<|endoftext|>", "id": 50256, "p": 1.0, "t_dtw": -1}]}]}
CPP_WORD_TIMES = [("Jack", 0.56, 0.84), ("found", 0.84, 1.2), ("golden", 1.2, 1.5), ("keys,", 1.5, 1.92),
                  ("\"under", 1.92, 2.2), ("soft", 2.2, 2.5), ("moss.\"", 2.6, 2.95)]
CPP_SEGMENTS = [("Jack found golden keys,", 0.5, 1.92), ("\"under soft moss.\"", 1.92, 2.95)]


def _times(items) -> list[tuple[str, float, float]]:
    return [(w.text, round(w.start_seconds, 6), round(w.stop_seconds, 6)) for w in items]


def test_hf_word_chunks_are_read_as_words(caplog):
    """Before: every chunk was a segment, so the words of ``return_timestamps="word"`` output came back as one-word
    captions and ``Transcript.words`` (the batch's ``word_texts``, ``measure``'s ``words``) was empty; and the open
    last chunk refused the whole file. Oracle: the stamps the test wrote (the last word's end: the median of the
    six closed words, 0.3 s, after its start)."""
    import loaders

    with caplog.at_level(logging.WARNING, logger="loaders"):
        transcript = loaders.read_transcript(json.dumps(HF_WORDS).encode(), name="talk.json")
    assert _times(transcript.words) == HF_WORD_TIMES
    # One sentence (no pause of 2 s): one segment, its text the chunks joined as the pipeline's "text" joins them.
    assert _times(transcript.spans) == [("Jack found golden keys, under soft moss.", 0.56, 2.9)]
    assert [len(s.words) for s in transcript.spans] == [7]
    assert "talk.json: chunks[6].timestamp: end is null" in caplog.text and "0.300 s" in caplog.text

    # Sentence chunks stay segments; so does mixed input (a one-word sentence among longer ones).
    sentences = {"text": " Jack found golden keys. Yes.", "chunks": [
        {"text": " Jack found golden keys.", "timestamp": [0.56, 1.92]}, {"text": " Yes.", "timestamp": [2.0, 2.3]}]}
    transcript = loaders.read_transcript(json.dumps(sentences).encode(), name="talk.json")
    assert _times(transcript.spans) == [("Jack found golden keys.", 0.56, 1.92), ("Yes.", 2.0, 2.3)]
    assert transcript.words == ()
    # An open chunk that is not the last, or an open sentence, is still refused by name.
    broken = json.loads(json.dumps(HF_WORDS))
    broken["chunks"][2]["timestamp"][1] = None
    with pytest.raises(loaders.TranscriptError, match=r"chunks\[2\]\.timestamp: end is null"):
        loaders.read_transcript(json.dumps(broken).encode(), name="talk.json")
    sentences["chunks"][-1]["timestamp"][1] = None
    with pytest.raises(loaders.TranscriptError, match=r"chunks\[1\]\.timestamp: end is null"):
        loaders.read_transcript(json.dumps(sentences).encode(), name="talk.json")


def test_whisper_cpp_full_json_tokens_become_words():
    """Before: only ``-ojf``'s segments were read; its tokens (with their times) were ignored, and forced alignment
    re-placed words whisper.cpp had timed. Oracle: the token times the test wrote (a word from its first token's
    ``from`` to its last's ``to``; word pieces and punctuation joined; special tokens skipped; a leading quote
    kept with the next word, from the quote's ``from``) and the tokens' ``p`` (a word's score: their mean)."""
    import loaders

    transcript = loaders.read_transcript(json.dumps(CPP_FULL).encode(), name="talk.json")
    assert _times(transcript.spans) == CPP_SEGMENTS
    assert _times(transcript.words) == CPP_WORD_TIMES
    assert [len(s.words) for s in transcript.spans] == [4, 3]
    assert [round(w.score, 6) for w in transcript.words[:2]] == [0.8, 0.8]  # "Jack" 0.8; "found": mean(0.6, 1.0)


def test_word_level_asr_json_words_keep_their_times_on_the_video_timeline():
    """What the user sees: ``align`` (offsets given as 0, so video time = stamp) lists the file's words at the file's
    times, and ``measure --json`` lists them, for both layouts (before: no word at all from the HF chunks; from
    whisper.cpp -ojf, words made up by forced alignment inside each segment)."""
    import aligner
    import loaders

    media = str(SAMPLE / "clip05.mp4")
    video, audio = loaders.read_video(media), loaders.read_audio(media)
    for document, expected in ((HF_WORDS, HF_WORD_TIMES), (CPP_FULL, CPP_WORD_TIMES)):
        transcript = loaders.read_transcript(json.dumps(document).encode(), name="talk.json")
        sample = aligner.align(video, audio, transcript, estimate=False)
        assert [(w.text, round(w.start_seconds, 6), round(w.stop_seconds, 6)) for w in sample.words] == expected


def test_measure_lists_the_words_of_word_level_json(tmp_path, capsys):
    """``avalign measure --json``'s ``words`` are the file's words (the text offset it estimates may move them)."""
    from avalign.cli import main

    for label, document, expected in (("hf", HF_WORDS, HF_WORD_TIMES), ("cpp", CPP_FULL, CPP_WORD_TIMES)):
        path = tmp_path / f"{label}.json"
        path.write_text(json.dumps(document))
        assert main(["measure", str(SAMPLE / "clip05.mp4"), "--transcript", str(path), "--json"]) == 0
        record = json.loads(capsys.readouterr().out)
        assert [w["text"] for w in record["words"]] == [t for t, _, _ in expected], label


# ---------------------------------------------------------------- 2. measure's table beside an abstention


def _blinking_clip(tmp_path):
    """``tests.test_av_periodic_alias.blinking_clip``: a flash and a tick 700 ms later every second; the A/V estimate
    abstains ``ambiguous_peak``."""
    from tests.test_av_periodic_alias import blinking_clip

    return blinking_clip(tmp_path)


def test_measure_table_names_no_confidence_beside_an_abstention(tmp_path, capsys):
    """Before: "A/V offset  n/a (abstained)  (confidence 1.0, abstain:ambiguous_peak; ...)": the best lag's match
    strength printed as a confidence, which read as certainty in the abstention. Now the reason is named beside
    the null and the figure under what it is; ``--json`` keeps its keys and values (a public contract). Oracle: the
    clip's flashes recur every second, so two lags match (``ambiguous_peak``), and ``--json``'s own values."""
    from avalign.cli import main

    clip = str(_blinking_clip(tmp_path))
    assert main(["measure", clip, "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["av_offset_ms"] is None and record["av_abstain"]["reason"] == "ambiguous_peak"
    strength = record["av_confidence"]
    assert strength == 1.0 and record["av_method"] == "abstain:ambiguous_peak"
    assert main(["measure", clip]) == 0
    table = capsys.readouterr().out
    (line,) = [line for line in table.splitlines() if line.startswith("A/V offset")]
    assert line == (f"A/V offset  n/a (abstained: ambiguous_peak)  (best lag's match strength {strength}, not a "
                    "confidence; > 0: audio lags)"), line

    # An answer keeps its confidence; a text abstention shows none (its figure mixes the methods': see "why").
    srt = tmp_path / "one.srt"
    srt.write_text("1\n00:00:00,545 --> 00:00:01,921\nJack found golden keys\n")
    media = str(SAMPLE / "clip05.mp4")
    assert main(["measure", media, "--transcript", str(srt), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["av_offset_ms"] is not None and record["text_offset_ms"] is None, record["text_abstain"]
    assert main(["measure", media, "--transcript", str(srt)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert f"(confidence {record['av_confidence']}, {record['av_method']}; > 0: audio lags)" in lines[3], lines[3]
    (text_line,) = [line for line in lines if line.startswith("text offset")]
    assert text_line == (f"text offset n/a (abstained: {record['text_abstain']['reason']})  (no confidence: see why; "
                         "> 0: stamps late)"), text_line


# ---------------------------------------------------------------- 3. captions that are not UTF-8

# A subtitle as a European DVD rip's "ANSI" SRT holds it: cp1252 bytes, CRLF; 0xe9 é, 0x93/0x94 curly quotes, 0x80 €,
# 0x81 (undefined in cp1252: Latin-1's U+0081).
CP1252_SRT = (b"1\r\n00:00:00,545 --> 00:00:01,921\r\nCaf\xe9 \x93cr\xe8me\x94\r\n\r\n"
              b"2\r\n00:00:01,921 --> 00:00:02,954\r\n5 \x80 \xe0 emporter\x81\r\n")
CP1252_TEXTS = ["Caf\u00e9 \u201ccr\u00e8me\u201d", "5 \u20ac \u00e0 emporter\u0081"]


def test_a_cp1252_caption_file_loads_with_a_warning(tmp_path, caplog):
    """Before: refused ("cannot decode as utf-8 ...; hint: re-save the transcript as UTF-8"). Now read as cp1252,
    with a warning naming the file and the encoding; every reader takes its text from the one decoder (SRT,
    WebVTT, JSON here). UTF-8 never goes that way (the same text as UTF-8 reads the same, with no warning), nor does
    UTF-8 with a broken byte, a UTF-8 BOM before cp1252 bytes, or binary. Oracle: the bytes the test wrote."""
    import loaders

    path = tmp_path / "dvd.srt"
    path.write_bytes(CP1252_SRT)
    with caplog.at_level(logging.WARNING, logger="loaders"):
        transcript = loaders.read_transcript(str(path))
    assert [(s.text, s.start_seconds, s.stop_seconds) for s in transcript.spans] == \
        [(CP1252_TEXTS[0], 0.545, 1.921), (CP1252_TEXTS[1], 1.921, 2.954)]
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warning.startswith(f"{path}: not UTF-8 (byte 37 is b'\\xe9'): read as cp1252"), warning

    vtt = "WEBVTT\n\n00:00.545 --> 00:01.921\nCaf\u00e9 \u201ccr\u00e8me\u201d\n".encode("cp1252")
    assert [s.text for s in loaders.read_transcript(vtt, name="dvd.vtt").spans] == [CP1252_TEXTS[0]]
    as_json = json.dumps({"segments": [{"start": 0.5, "end": 1.9, "text": "Caf\u00e9"}]}, ensure_ascii=False)
    assert [s.text for s in loaders.read_transcript(as_json.encode("cp1252"), name="w.json").spans] == ["Caf\u00e9"]

    caplog.clear()
    utf8 = CP1252_SRT.decode("cp1252", errors="ignore").replace("emporter", "emporter\u0081").encode("utf-8")
    with caplog.at_level(logging.WARNING, logger="loaders"):
        assert [s.text for s in loaders.read_transcript(utf8, name="u.srt").spans] == CP1252_TEXTS
        assert [s.text for s in loaders.read_transcript(b"\xef\xbb\xbf" + utf8, name="u.srt").spans] == CP1252_TEXTS
    assert not caplog.records
    for content, match in ((utf8 + b"\xe9\r\n", r"b\.srt: byte \d+: cannot decode as utf-8 .*it is UTF-8 with 1 broken byte"),
                           (b"\xef\xbb\xbf" + CP1252_SRT, r"b\.srt: byte \d+: .*starts with a UTF-8 byte order mark"),
                           (CP1252_SRT + b"\0\0", r"b\.srt: byte \d+: .*holds NUL bytes: it is binary")):
        with pytest.raises(loaders.TranscriptError, match=match):
            loaders.read_transcript(content, name="b.srt")


def test_cp1252_captions_reach_the_batch(tmp_path):
    """Before: a video2dataset ``KEY.txt`` caption in cp1252 was a skipped sample, and a cp1252 ``KEY.json``
    metadata caption was taken for a broken transcript (skipped too). Oracle: the captions the test wrote."""
    import loaders

    clip = (SAMPLE / "clip05.mp4").read_bytes()
    members = [("a.mp4", clip), ("a.txt", "Caf\u00e9 cr\u00e8me".encode("cp1252")), ("b.mp4", clip),
               ("b.json", json.dumps({"url": "http://x/b.mp4", "caption": "Cr\u00e8me br\u00fbl\u00e9e \u20ac5"},
                                     ensure_ascii=False).encode("cp1252"))]
    shard = write_tar(tmp_path / "s-000.tar", members)
    loader = loaders.make_loader(str(shard), seed=0, frame_size=(16, 16))
    texts = {key: text for batch in loader for key, text in zip(batch.sample_keys, batch.segment_texts)}
    assert loader.stats.skipped == {}
    assert texts == {"a": "Caf\u00e9 cr\u00e8me", "b": "Cr\u00e8me br\u00fbl\u00e9e \u20ac5"}
