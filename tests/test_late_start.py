"""Media whose streams start long after time 0 fail clearly before the aligned audio is allocated (adv43 F2, crash).

Before: the timeline starts at 0, so a 1 s clip cut from 100000 s into a recording made ``avalign measure`` allocate
5.96 GiB of leading silence (a raw MemoryError traceback under a memory cap) and the loader skip it as "out of
memory". Here the clip starts at 700 s (45 MB before the change, cheap to check): ``measure`` exits 2 naming the file,
the start and the fix; the loader skips the sample as ``too_large`` with the same words.
"""
from __future__ import annotations

import json
import logging

import pytest

import loaders
from avalign.cli import main
from tests.conftest import ffmpeg
from tests.corrupt_cases import write_tar


@pytest.fixture(scope="module")
def late_clip(tmp_path_factory):
    out = tmp_path_factory.mktemp("late") / "late700.mkv"
    ffmpeg("-f", "lavfi", "-i", "testsrc=size=32x24:rate=10", "-f", "lavfi", "-i", "sine=f=440:r=16000", "-t", "1",
           "-c:v", "libx264", "-c:a", "aac", "-ac", "1", "-output_ts_offset", "700", str(out))
    return out


def test_measure_names_the_file_the_start_and_the_fix(late_clip, capsys):
    code = main(["measure", str(late_clip), "--json"])
    error = json.loads(capsys.readouterr().out)["error"]
    assert code == 2 and error["reason"] == "too_large"
    assert error["message"].startswith(f"{late_clip}: the media starts 700.000 s after time 0 (first frame at 700.000 s, "
                                       "audio from 699.936 s): on the timeline, which starts at 0")
    assert ("it would follow 700 s of silence without frames (11200000 audio samples at 16000 Hz, 0.04 GiB), more than "
            "600 s. Re-mux it to start near 0 (`ffmpeg -i IN -c copy -avoid_negative_ts make_zero OUT`)") in error["message"]


def test_the_loader_skips_it_as_too_large_with_the_same_words(late_clip, tmp_path, caplog):
    url = write_tar(tmp_path / "s.tar", [("late.mkv", late_clip.read_bytes()), ("late.txt", b"a caption")])
    ds = loaders.make_dataset([url], seed=0, frame_size=(16, 16), allow_empty_epoch=True)
    with caplog.at_level(logging.WARNING, logger="loaders"):
        assert list(ds) == []
    assert ds.stats.skipped_samples == ((url, "late", "too_large"),)
    assert any("late: the media starts 700.000 s after time 0" in r.getMessage() and "make_zero" in r.getMessage()
               for r in caplog.records)
