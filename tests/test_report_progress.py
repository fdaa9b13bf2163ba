"""``avalign report`` progress ends at 100 % with the summary's skipped count (adv43 F9).

Before: "report: 9/8 clip (112%) ... reported=8, skipped=1" then "clips 8 reported, 3 skipped": preprocess's skips
(skipped.jsonl) and a second media of one stem advanced the bar, and skips after the last clip were not shown.
Then (fourteenth session): "report: 2/2 clip (100%) ... reported=2, skipped=2": the counters did not add up to the
total. Now ``reported + skipped`` is the total's clips, and the inputs that are not clips (preprocess's skip records, a
second media of a stem) are counted apart as ``not_clips``: ``skipped + not_clips`` is the summary's skipped count.
"""
from __future__ import annotations

import json
import re

from avalign.cli import main
from tests.conftest import tiny_clip
from tests.corrupt_cases import write_tar


def _final_progress(err: str) -> str:
    return [line for line in err.splitlines() if line.startswith("report: ")][-1]


def test_progress_of_shards_with_preprocess_skips_ends_at_the_total(tmp_path, capsys):
    clip = tiny_clip(tmp_path / "c.mp4", 0.5, fps=10, sample_rate=16000)
    folder = tmp_path / "pp"
    folder.mkdir()
    write_tar(folder / "shard-000000.tar", [("k0.mp4", clip), ("k1.mp4", clip)])
    (folder / "skipped.jsonl").write_text("".join(json.dumps({"input": "raw.tar", "key": k, "reason": r, "message": "x"})
                                                  + "\n" for k, r in (("k0", "duplicate_key"), ("o", "missing_media"))))
    assert main(["report", str(folder), "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert re.match(r"report: 2/2 clip \(100%\), .*, reported=2, skipped=0, not_clips=2$", _final_progress(err)), err
    summary = json.loads((tmp_path / "out" / "report.json").read_text())
    assert len(summary["clips"]) == 2 and len(summary["skipped"]) == 2


def test_progress_of_a_media_directory_with_two_media_of_one_stem(tmp_path, capsys):
    folder = tmp_path / "media"
    folder.mkdir()
    clip = tiny_clip(folder / "a.mp4", 0.5, fps=10, sample_rate=16000)
    (folder / "a.mov").write_bytes(clip)
    (folder / "b.mp4").write_bytes(clip)
    assert main(["report", str(folder), "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert re.match(r"report: 2/2 clip \(100%\), .*, reported=2, skipped=0, not_clips=1$", _final_progress(err)), err


def test_the_last_progress_line_under_on_error_raise_counts_the_clip_that_raised(tmp_path, capsys):
    """``--on-error raise`` stops at the first bad clip; the last progress line now counts it (before: the line ended
    at the clip before, ``1/2 ... reported=1, skipped=0``, as if the run had stopped between clips)."""
    clip = tiny_clip(tmp_path / "c.mp4", 0.5, fps=10, sample_rate=16000)
    folder = tmp_path / "bad"
    folder.mkdir()
    write_tar(folder / "shard-000000.tar", [("k0.mp4", clip), ("k1.mp4", b"\x00not a video" * 64)])
    assert main(["report", str(folder), "--out", str(tmp_path / "out"), "--on-error", "raise"]) != 0
    err = capsys.readouterr().err
    assert re.match(r"report: 2/2 clip \(100%\), .*, reported=1, skipped=1$", _final_progress(err)), err
    assert "k1" in err


def test_preprocess_last_progress_line_under_on_error_raise_counts_the_clip_that_raised(tmp_path, capsys):
    """The same for ``avalign preprocess --on-error raise`` (before: ``1/2 ... done=1, skipped=0``)."""
    clip = tiny_clip(tmp_path / "c.mp4", 0.5, fps=10, sample_rate=16000)
    folder = tmp_path / "bad"
    folder.mkdir()
    write_tar(folder / "shard-000000.tar", [("k0.mp4", clip), ("k1.mp4", b"\x00not a video" * 64)])
    assert main(["preprocess", str(folder), str(tmp_path / "out"), "--on-error", "raise"]) != 0
    err = capsys.readouterr().err
    last = [line for line in err.splitlines() if line.startswith("preprocess: ")][-1]
    assert re.match(r"preprocess: 2/2 clip \(100%\), .*, done=1, skipped=1$", last), err
    assert "k1" in err
