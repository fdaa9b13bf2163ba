"""``avalign report`` reads a measured clip's transcript once: for the measure and for the row's word count.

Before (fourteenth session), it was read a second time for the word count, with a logging filter on
``loaders._transcripts`` so that its warnings (a cp1252 file…) were not logged twice. Oracles: the number of reads,
the warning logged once, and the caption's 3 words.
"""
from __future__ import annotations

import logging

import loaders
from avalign.report import collect
from tests.conftest import tiny_clip


def test_a_measured_clip_reads_its_transcript_once(tmp_path, monkeypatch, caplog):
    folder = tmp_path / "media"
    folder.mkdir()
    tiny_clip(folder / "a.mp4", 1.0, fps=10, sample_rate=16000)
    (folder / "a.srt").write_bytes(b"1\r\n00:00:00,100 --> 00:00:00,900\r\nCaf\xe9 cr\xe8me br\xfbl\xe9e\r\n")  # cp1252
    reads = []
    original = loaders.read_transcript

    def counting(*args, **kwargs):
        reads.append(kwargs.get("name"))
        return original(*args, **kwargs)

    monkeypatch.setattr(loaders, "read_transcript", counting)
    with caplog.at_level(logging.WARNING, logger="loaders._transcripts"):
        rows, skipped = collect(str(folder), progress=False)
    assert skipped == [] and [r["num_words"] for r in rows] == [3]
    assert len(reads) == 1, reads
    assert sum("1252" in r.getMessage() for r in caplog.records) == 1
