"""A user's defects (round 39): each test reads what the user had (a hand-written document whose times, words and
bytes the test knows) and checks what avalign makes of it against those."""
from __future__ import annotations

import json
import logging

import pytest

from tests.conftest import REPO

SAMPLE = REPO / "sample_data"

# ---------------------------------------------------------------- 1. word-level ASR JSON (HF pipeline, whisper.cpp -ojf)

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
                  ("\"under", 1.93, 2.2), ("soft", 2.2, 2.5), ("moss.\"", 2.6, 2.95)]
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
    assert [len(s.words) for s in transcript.spans] == [1] * 7  # each word its own span, as a TextGrid word tier's
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
    kept with the next word) and the tokens' ``p`` (a word's score: their mean)."""
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
