"""Words for caption transcripts (SRT, WebVTT): forced alignment inside each caption, everywhere.

Oracles: ``sample_data/truth.json`` (the generator's word times on the video timeline, caption texts and
offsets) and ffprobe-checked frame pts (via ``frame_range``'s rule, asserted against the pts directly).
"""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

import aligner
import loaders
from aligner.estimators import normalise_words, written_words
from conftest import SAMPLE_DATA, sample_truth

pytest.importorskip("pocketsphinx")


def _measure_json(clip: str, capsys) -> tuple[dict, dict]:
    """``avalign measure MEDIA --transcript T --json`` through the CLI's parser and command, in this process."""
    from avalign.cli import build_parser

    truth = sample_truth()[clip]
    args = build_parser().parse_args(["measure", str(SAMPLE_DATA / truth["media"]),
                                      "--transcript", str(SAMPLE_DATA / truth["transcript"]), "--json"])
    assert args.func(args) == 0
    return json.loads(capsys.readouterr().out), truth


@pytest.mark.parametrize("clip", ["clip01", "clip02"])  # SRT and WebVTT
def test_measure_gives_caption_words_and_segments(clip, capsys):
    record, truth = _measure_json(clip, capsys)
    assert record["text_offset_ms"] == pytest.approx(truth["text_offset_ms"], abs=15.0)
    assert record["text_abstain"] is None
    captions = loaders.read_transcript(str(SAMPLE_DATA / truth["transcript"]))
    # Segments: every caption, on the video timeline (stamp - text offset, A/V clock), with frame/sample ranges.
    assert [s["text"] for s in record["segments"]] == [s.text for s in captions.spans]
    pts = json.loads((SAMPLE_DATA / truth["ffprobe_frames"]).read_text())
    pts = np.asarray([float(f["best_effort_timestamp_time"]) for f in pts["frames"]])
    for s in record["segments"]:
        inside = np.flatnonzero((pts >= s["start_seconds"] - 1e-6) & (pts < s["stop_seconds"] - 1e-6))
        assert (s["frame_start"], s["frame_stop"]) == (int(inside[0]), int(inside[-1]) + 1), s
        assert s["sample_stop"] - s["sample_start"] == pytest.approx((s["stop_seconds"] - s["start_seconds"]) * 16000, abs=1)
    # Words: the captions' words in order, each inside the media; starts near the generator's truth. clip01's last
    # caption ("during long nights", espeak-ng speech over exact digital silence) fits at -35.5 per frame on the exact
    # zeros, just under MIN_WORD_FIT, and only over a recording's floor above it (aligner._forced's FIT_FLOOR_BELOW_DB).
    unplaced: set = set()
    assert record["caption_words_failed"] == len(unplaced)
    assert [w["text"] for w in record["words"]] == [n for s in captions.spans if s.text not in unplaced
                                                    for n in written_words(s.text)]
    spoken = [t for s in captions.spans if s.text not in unplaced for t in normalise_words(s.text)]
    placed_truth = [t for t in truth["words"] if normalise_words(t["text"])[0] in spoken]
    errors_ms = [abs(w["start_seconds"] - t["start_seconds"]) * 1000 for w, t in zip(record["words"], placed_truth)]
    assert len(errors_ms) == len(record["words"]) == len(placed_truth)
    assert np.median(errors_ms) <= 30.0, np.round(errors_ms, 1)  # measured: 19.3 (clip01), 24.3 ms (clip02)


def test_align_keeps_segments_when_caption_alignment_fails():
    """A caption whose text is not spoken in its window fails alignment: its segment stays, it gets no words."""
    truth = sample_truth()["clip02"]
    audio = loaders.read_audio(str(SAMPLE_DATA / truth["media"]))
    captions = loaders.read_transcript(str(SAMPLE_DATA / truth["transcript"]))
    first = captions.spans[0]
    import dataclasses

    wrong = dataclasses.replace(first, text="zebra xylophone quantum " * 3)
    broken = dataclasses.replace(captions, spans=(wrong, *captions.spans[1:]))
    sample = aligner.align(None, audio, broken, text_offset_ms=truth["text_offset_ms"])
    assert len(sample.segments) == len(captions.spans)
    assert sample.report.caption_words_failed == 1
    assert [w.text for w in sample.words] == [n for s in captions.spans[1:] for n in written_words(s.text)]
    assert sample.transcript.spans[0].words == () and all(s.words for s in sample.transcript.spans[1:])


def test_caption_words_off_and_word_level_untouched():
    truth = sample_truth()["clip01"]
    audio = loaders.read_audio(str(SAMPLE_DATA / truth["media"]))
    captions = loaders.read_transcript(str(SAMPLE_DATA / truth["transcript"]))
    assert aligner.align(None, audio, captions, text_offset_ms=90.0, caption_words=False).words == ()
    worded = loaders.read_transcript(str(SAMPLE_DATA / sample_truth()["clip00"]["transcript"]))
    sample = aligner.align(None, audio, worded, text_offset_ms=0.0)
    assert sample.transcript is worded  # word times given: nothing is re-aligned


def test_preprocess_stores_caption_words(tmp_path):
    """align.json carries words and segments; transcript.json carries the caption words (transcript clock), so
    loading a preprocessed shard gets words without aligning again."""
    import shutil
    import tarfile

    from avalign.preprocess import preprocess

    truth = sample_truth()["clip02"]
    src = tmp_path / "in"
    src.mkdir()
    shutil.copy(SAMPLE_DATA / truth["media"], src / truth["media"])
    shutil.copy(SAMPLE_DATA / truth["transcript"], src / truth["transcript"])
    preprocess(str(src), str(tmp_path / "out"), progress=False, timeout_seconds=None)  # no watchdog fork per sample
    members = {}
    for shard in sorted((tmp_path / "out").glob("shard-*.tar")):
        with tarfile.open(shard) as tar:
            members.update({m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()})
    record = json.loads(members["clip02.align.json"])
    expected = [n for s in loaders.read_transcript(str(SAMPLE_DATA / truth["transcript"])).spans for n in written_words(s.text)]
    assert [w["text"] for w in record["words"]] == expected and len(record["segments"]) == 3
    stored = loaders.read_transcript(members["clip02.transcript.json"], format="json", name="clip02.transcript.json")
    assert [w.text for w in stored.words] == expected
    # Stamps stay on the transcript clock: stored word - text offset = measured word (video timeline, A/V applied).
    # Loading does not align again: the stored words, marked here in capitals, are the ones used.
    marked = dataclasses.replace(stored, spans=tuple(
        dataclasses.replace(s, words=tuple(dataclasses.replace(w, text=w.text.upper()) for w in s.words))
        for s in stored.spans))
    audio = loaders.read_audio(str(SAMPLE_DATA / truth["media"]))
    sample = aligner.align(None, audio, marked, estimate=False, text_offset_ms=record["text_offset_ms"],
                           av_offset_ms=record["av_offset_ms"], drift_ppm=record["drift_ppm"])
    assert [w.text for w in sample.words] == [text.upper() for text in expected]
    assert [w.start_seconds for w in sample.words] == pytest.approx([w["start_seconds"] for w in record["words"]],
                                                                   abs=1e-5)


def test_loader_batches_carry_caption_words():
    """Raw sample shards (SRT/WebVTT clips among them): packed batches list the captions' forced-aligned words
    (all of them but those of a caption whose alignment fails: clip05's "Jack found golden keys")."""
    from loaders import make_loader

    caption_words_all, aligned_words = set(), set()
    for key, record in sample_truth().items():
        if record["transcript"].endswith((".srt", ".vtt")):
            captions = loaders.read_transcript(str(SAMPLE_DATA / record["transcript"]))
            caption_words_all |= {n for s in captions.spans for n in written_words(s.text)}
            audio = loaders.read_audio(str(SAMPLE_DATA / record["media"]))
            # At the generator's transcript offset: at none, a caption 240 ms off (clip02) misses part of its speech and
            # its words no longer fit the audio (``MIN_WORD_FIT``: kept without words).
            aligned_words |= {w.text for w in aligner.align(None, audio, captions, estimate=False,
                                                             text_offset_ms=record["text_offset_ms"]).words}
    words = set()
    for batch in make_loader(str(SAMPLE_DATA / "shards" / "shard-{000000..000001}.tar"), seed=0):
        words |= set(batch.word_texts)
    assert aligned_words <= words, sorted(aligned_words - words)
    assert len(aligned_words) >= 0.8 * len(caption_words_all), sorted(caption_words_all - aligned_words)
