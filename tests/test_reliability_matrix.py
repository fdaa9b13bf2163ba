"""Reliability matrix: every corrupt/hostile case × {loader, preprocess, report} × {skip, raise}.

With ``skip`` the good sample comes through with the same values as in a clean run, the bad one is
counted once under its specific reason (see the table in ``tests/corrupt_cases.py``) and logged once
with its shard and key; a case expected to be "kept" comes through with the problem flagged. With
``raise`` the error is a ValueError subclass whose message names the shard, the key and the reason.
Known library gaps are strict xfails listed in ``KNOWN_FAILURES`` (flip them when the library is fixed).
"""
from __future__ import annotations

import io
import json
import logging
import pickle
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch

from loaders.errors import SampleError
from tests.corrupt_cases import BAD_KEY, GOOD_KEY, TOOLS, build_cases

MODES = ("skip", "raise")
LOADER_OPTIONS = dict(seed=0, budgets=(64, 64_000, 64), buffer_size=4, frame_size=(24, 32), max_items=8,
                      max_words=32, max_segments=16)
CLIP_FRAMES = 10
"""Frames of every bad clip: generated as 1 s at 10 fps (the generator's ground truth)."""
HEADER_FRAMES = 1_000_000_000
"""What the patched AVI header claims."""
SAMPLE_KEY = {"dotdot_name": "../bad", "absolute_name": "/tmp/bad"}
"""The sample key of the bad members when it is not ``bad`` (their member names minus the extension)."""

KNOWN_FAILURES: dict[tuple[str, str, str], str] = {}
"""(case, tool, mode) → why it fails: strict xfails for known library gaps (none left)."""
CASE_NAMES = (
    "truncated_media", "truncated_faststart", "empty_media", "random_bytes", "video_only", "no_av_stream", "audio_only", "missing_transcript",
    "malformed_json", "malformed_srt", "malformed_vtt", "malformed_textgrid", "stop_before_start",
    "spans_beyond_media", "duplicate_key", "dotdot_name", "absolute_name", "truncated_tar",
    "lying_frame_count", "over_max_pixels",
)


def _params():
    for case in CASE_NAMES:
        for tool in TOOLS:
            for mode in MODES:
                reason = KNOWN_FAILURES.get((case, tool, mode))
                marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
                yield pytest.param(case, tool, mode, marks=marks, id=f"{case}-{tool}-{mode}")


# -- running each tool -----------------------------------------------------------------------------------


def _loader_items(shard: str, on_error: str) -> tuple[dict, object]:
    """Key → {frames, audio, words: [(text, f0, f1, s0, s1)]} (item-relative), and the loader's stats."""
    from loaders.pipeline import make_loader

    loader = make_loader(shard, on_error=on_error, **LOADER_OPTIONS)
    items: dict[str, list] = {}
    for batch in loader:
        cu_f, cu_s = batch.cu_seqlens_frames.tolist(), batch.cu_seqlens_samples.tolist()
        spans = batch.word_spans[: batch.num_words].tolist()
        for i, key in enumerate(batch.sample_keys):
            words = [(batch.word_texts[r], row[1] - cu_f[i], row[2] - cu_f[i], row[3] - cu_s[i], row[4] - cu_s[i])
                     for r, row in enumerate(spans) if row[0] == i]
            items.setdefault(key, []).append({
                "frames": batch.frames[cu_f[i]:cu_f[i + 1]].clone(),
                "audio": batch.audio[cu_s[i]:cu_s[i + 1]].clone(),
                "words": words,
            })
    return items, loader.stats


def _read_tar(path: Path) -> dict[str, bytes]:
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}


def _preprocess(shard: str, out: Path, on_error: str) -> tuple[dict[str, bytes], list[dict]]:
    from avalign.preprocess import preprocess

    preprocess(shard, str(out), on_error=on_error, progress=False, workers=1)
    members = _read_tar(out / "shard-000000.tar") if (out / "shard-000000.tar").exists() else {}
    skipped = [json.loads(line) for line in (out / "skipped.jsonl").read_text().splitlines() if line]
    return members, skipped


def _report(shard: str, out: Path, on_error: str, *, clip_pages: int = 50) -> dict:
    from avalign.report import run_report

    run_report(shard, out_dir=str(out), on_error=on_error, clip_pages=clip_pages)
    return json.loads((out / "report.json").read_text())


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("corrupt_cases")
    clean, cases = build_cases(root)
    return {"root": root, "clean": clean, "cases": cases, "cache": {}}


def _clean(built, tool: str):
    """The clean run of a tool (good sample only), computed once per module."""
    cache = built["cache"]
    if tool not in cache:
        if tool == "loader":
            cache[tool] = _loader_items(built["clean"], "skip")[0]
        elif tool == "preprocess":
            cache[tool] = _preprocess(built["clean"], built["root"] / "pp_clean", "skip")[0]
        else:
            cache[tool] = _report(built["clean"], built["root"] / "report_clean", "skip")
    return cache[tool]


def _logged_once(caplog, shard: str, key: str) -> None:
    hits = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING
            and shard in r.getMessage() and key in r.getMessage()]
    assert len(hits) == 1, f"expected one warning naming {shard!r} and {key!r}, got {len(hits)}: {hits}"


def _check_error(error: BaseException, shard: str, key: str, reason: str) -> None:
    assert isinstance(error, ValueError), f"{type(error).__name__} is not a ValueError subclass: {error}"
    message = str(error)
    assert shard in message, f"message does not name the shard {shard!r}: {message}"
    names_key = f"key={key!r}" in message or f"key='{key}." in message or f"{shard}:{key}" in message  # key or member
    assert names_key, f"message does not name the key {key!r}: {message}"
    assert f"reason={reason}" in message, f"message does not name the reason {reason!r}: {message}"


# -- per-tool checks -------------------------------------------------------------------------------------


def _check_loader(built, case, mode: str, caplog) -> None:
    expect, key = case.expect["loader"], SAMPLE_KEY.get(case.name, BAD_KEY)
    if expect.outcome == "skip" and mode == "raise":
        with pytest.raises(ValueError) as info:  # anything else propagates: a failure
            _loader_items(case.shard, "raise")
        _check_error(info.value, case.shard, key, expect.reason)
        return
    with caplog.at_level(logging.WARNING):
        items, stats = _loader_items(case.shard, mode)
    clean = _clean(built, "loader")
    assert len(items[GOOD_KEY]) == 1
    good, reference = items[GOOD_KEY][0], clean[GOOD_KEY][0]
    assert torch.equal(good["frames"], reference["frames"]) and torch.equal(good["audio"], reference["audio"])
    assert good["words"] == reference["words"]
    if expect.outcome == "skip":
        assert stats.skipped == {expect.reason: 1}, stats.skipped_samples
        assert stats.skipped_samples == ((case.shard, key, expect.reason),)
        _logged_once(caplog, case.shard, key)
        if expect.flagged == "first_copy":  # the first copy of the duplicated key is a valid sample
            assert len(items[BAD_KEY]) == 1 and [w[0] for w in items[BAD_KEY][0]["words"]] == ["alpha", "beta"]
        else:
            assert key not in items
        return
    assert stats.skipped == {} and len(items[BAD_KEY]) == 1
    bad = items[BAD_KEY][0]
    if expect.flagged == "no_words":
        assert bad["words"] == [] and bad["frames"].shape[0] == CLIP_FRAMES
    elif expect.flagged == "frame_count":
        assert bad["frames"].shape[0] == CLIP_FRAMES  # the content, not the header's 1e9
    elif expect.flagged == "no_audio":  # every frame, an empty audio span, words keep their frames
        assert bad["frames"].shape[0] == CLIP_FRAMES and bad["audio"].shape[0] == 0
        assert [w[0] for w in bad["words"]] == ["alpha", "beta"] and [w[1:3] for w in bad["words"]] == [(2, 4), (5, 8)]
        assert all(w[3] == w[4] == 0 for w in bad["words"])
    elif expect.flagged == "no_video":  # no frames, the whole audio track, words on the samples (16 kHz)
        from loaders import read_audio

        track = read_audio(_read_tar(Path(case.shard))[f"{BAD_KEY}.mp4"], sample_rate=16000)
        assert bad["frames"].shape[0] == 0 and bad["audio"].shape[0] == track.num_samples >= 16000
        assert [w[0] for w in bad["words"]] == ["alpha", "beta"] and [w[3:] for w in bad["words"]] == [(3200, 6400), (8000, 12800)]
    elif expect.flagged == "spans_outside":
        words = {w[0]: w for w in bad["words"]}
        assert sorted(words) == ["inside", "straddles"]  # "after" (5-6 s) lies wholly outside the 1 s clip
        n_frames, n_samples = bad["frames"].shape[0], bad["audio"].shape[0]
        assert words["inside"][1:] == (2, 4, 3200, 6400)  # [0.2, 0.4) s at 10 fps / 16 kHz
        assert words["straddles"][1:] == (8, n_frames, 12800, n_samples)  # clipped to the media end
        assert getattr(stats, "spans_outside", None) == 2  # one word + one segment counted


def _check_preprocess(built, case, mode: str, caplog, tmp_path) -> None:
    expect, key = case.expect["preprocess"], SAMPLE_KEY.get(case.name, BAD_KEY)
    if expect.outcome == "skip" and mode == "raise":
        with pytest.raises(ValueError) as info:  # anything else propagates: a failure
            _preprocess(case.shard, tmp_path / "out", "raise")
        _check_error(info.value, case.shard, key, expect.reason)
        return
    with caplog.at_level(logging.WARNING):
        members, skipped = _preprocess(case.shard, tmp_path / "out", mode)
    clean = _clean(built, "preprocess")
    for name, data in clean.items():  # the good sample's members are byte-identical to the clean run's
        assert members.get(name) == data, f"{name} differs from the clean run"
    bad_members = {n for n in members if n.startswith(f"{BAD_KEY}.")}
    if expect.outcome == "skip":
        assert [(row["key"], row["reason"]) for row in skipped] == [(key, expect.reason)], skipped
        assert case.shard in skipped[0]["input"]
        _logged_once(caplog, case.shard, key)
        if expect.flagged == "first_copy":
            words = json.loads(members[f"{BAD_KEY}.transcript.json"])["spans"][0]["words"]
            assert [w["text"] for w in words] == ["alpha", "beta"]
        else:
            assert not bad_members
        return
    assert skipped == []
    record = json.loads(members[f"{BAD_KEY}.align.json"])
    if expect.flagged == "no_words":
        assert record["transcript"] is None and f"{BAD_KEY}.transcript.json" not in members
    elif expect.flagged == "no_video":
        assert record["av_offset_ms"] is None and f"{BAD_KEY}.frames.json" not in members
        assert record["audio"]["num_samples"] > 0
    elif expect.flagged == "no_audio":  # every frame indexed, nothing to measure against: offsets null
        assert record["av_offset_ms"] is None and record["text_offset_ms"] is None
        assert record["audio"]["num_samples"] == 0 and record["video"]["num_frames"] == CLIP_FRAMES
        assert len(json.loads(members[f"{BAD_KEY}.frames.json"])["pts_seconds"]) == CLIP_FRAMES
    elif expect.flagged == "spans_outside":
        assert record["aligned"]["spans_outside"] == 2
    elif expect.flagged == "frame_count":
        assert record["video"]["num_frames"] == CLIP_FRAMES
        assert len(json.loads(members[f"{BAD_KEY}.frames.json"])["pts_seconds"]) == CLIP_FRAMES


def _plot_input(rows) -> list[dict]:
    """Rows as the summary plots use them: without the clip-page links (which only a run writing pages has), in
    their JSON form (as ``report.json`` holds them)."""
    return [{k: v for k, v in row.items() if k != "page"} for row in json.loads(json.dumps(rows))]


def _kept_plot_rows(built, case, tmp_path) -> list[dict]:
    """The rows of a kept case's skip run, which drew its summary plots from them (``run_report`` plots the rows it
    writes to ``report.json``); that run is made here if it was not."""
    cache = built["cache"]
    if ("plot_rows", case.name) not in cache:
        cache["plot_rows", case.name] = _plot_input(_report(case.shard, tmp_path / "report_skip", "skip",
                                                            clip_pages=0)["clips"])
    return cache["plot_rows", case.name]


def _check_report(built, case, mode: str, caplog, tmp_path, monkeypatch) -> None:
    expect, key = case.expect["report"], SAMPLE_KEY.get(case.name, BAD_KEY)
    if expect.outcome == "skip" and mode == "raise":
        with pytest.raises(ValueError) as info:  # anything else propagates: a failure
            _report(case.shard, tmp_path / "report", "raise")
        _check_error(info.value, case.shard, key, expect.reason)
        return
    # Clip pages (each decodes and plots its clip again: most of a report's cost here) only where a kept bad clip
    # gets one, once per case: a skipped sample has no row, and on_error does not reach the page writer.
    pages = 50 if expect.outcome == "kept" and mode == "skip" else 0
    # The summary plots are drawn from the rows alone. Where the bad sample leaves no row, they are given the
    # clean run's rows (checked below), so they would be the clean run's plots: the rows are recorded instead of
    # drawn again (about 0.75 CPU-s a report). Kept bad rows (and a kept first copy) are drawn in the skip run; a
    # kept case skips nothing, so its raise run hands the plotter exactly the skip run's rows (checked, the
    # clip-page links aside): recorded there.
    recorded = expect.outcome == "skip" and expect.flagged != "first_copy"
    kept_raise = expect.outcome == "kept" and mode == "raise"
    plotted: list[list[str]] = []
    if recorded:
        clean_keys = [row["key"] for row in _clean(built, "report")["clips"]]  # the clean run, plots drawn
        monkeypatch.setattr("avalign.report._plots.make_plots",  # private: run_report imports it at call time
                            lambda rows: plotted.append([row["key"] for row in rows]) or {})
    elif kept_raise:
        drawn = _kept_plot_rows(built, case, tmp_path)  # the skip run's rows, plots drawn from them
        monkeypatch.setattr("avalign.report._plots.make_plots", lambda rows: plotted.append(_plot_input(rows)) or {})
    with caplog.at_level(logging.WARNING):
        report = _report(case.shard, tmp_path / "report", mode, clip_pages=pages)
    if expect.outcome == "kept" and mode == "skip":  # drawn here; its rows kept for the raise run
        built["cache"]["plot_rows", case.name] = _plot_input(report["clips"])
    if recorded:
        assert plotted == [clean_keys] == [[GOOD_KEY]], plotted
    if kept_raise:
        assert plotted == [drawn] and len(drawn) == 2, plotted
    clean = _clean(built, "report")
    rows = {row["key"]: row for row in report["clips"]}
    reference = dict(clean["clips"][0], shard=case.shard)
    if not pages:
        reference.pop("page", None)
        assert report["summary"]["num_clip_pages"] == 0
    assert rows[GOOD_KEY] == reference
    if expect.outcome == "skip":
        assert [(s["key"], s["reason"]) for s in report["skipped"]] == [(key, expect.reason)], report["skipped"]
        assert report["skipped"][0]["shard"] == case.shard
        assert report["summary"]["skipped_by_reason"] == {expect.reason: 1}
        _logged_once(caplog, case.shard, key)
        if expect.flagged != "first_copy":
            assert key not in rows
        return
    assert report["skipped"] == [] and report["summary"]["num_clips"] == 2
    row = rows[BAD_KEY]
    if expect.flagged == "no_words":
        assert row["has_transcript"] is False and row["text_offset_ms"] is None
    elif expect.flagged == "no_video":
        assert row["av_offset_ms"] is None and row["container"].get("num_frames_from_content") is None
        assert row["container"]["audio_duration_seconds"] > 0.9
    elif expect.flagged == "no_audio":
        assert row["av_offset_ms"] is None and row["text_offset_ms"] is None
        assert row["container"]["num_frames_from_content"] == CLIP_FRAMES
    elif expect.flagged == "spans_outside":
        assert row["spans_outside"] == 2
    elif expect.flagged == "frame_count":
        assert row["container"]["num_frames_from_content"] == CLIP_FRAMES
        assert row["container"]["frame_count_mismatch"] == CLIP_FRAMES - HEADER_FRAMES


@pytest.mark.timeout(60)
@pytest.mark.parametrize("case_name, tool, mode", list(_params()))
def test_matrix(built, case_name, tool, mode, caplog, tmp_path, monkeypatch):
    case = built["cases"][case_name]
    if tool == "loader":
        _check_loader(built, case, mode, caplog)
    elif tool == "preprocess":
        _check_preprocess(built, case, mode, caplog, tmp_path)
    else:
        _check_report(built, case, mode, caplog, tmp_path, monkeypatch)


def test_every_case_has_an_expectation_per_tool(built):
    assert set(built["cases"]) == set(CASE_NAMES)
    for case in built["cases"].values():
        assert set(case.expect) == set(TOOLS), case.name
        for expect in case.expect.values():
            assert expect.outcome in ("skip", "kept") and bool(expect.reason) == (expect.outcome == "skip")


def test_clean_run_is_the_oracle(built):
    """The clean loader run itself is right: 10 frames of 1 s at 10 fps, 16000 samples, the 3 words on the grid."""
    clean = _clean(built, "loader")[GOOD_KEY][0]
    assert clean["frames"].shape[0] == 10 and clean["audio"].shape[0] == 16000
    assert clean["words"] == [("one", 1, 3, 1600, 4800), ("two", 4, 6, 6400, 9600), ("three", 7, 9, 11200, 14400)]
    assert float(np.abs(clean["audio"].numpy()).max()) > 0.1


# -- the fixes behind the matrix, checked directly ------------------------------------------------------


def test_expected_reasons_are_the_shared_vocabulary(built):
    """Every reason the matrix expects, from any tool, is a code of the one documented vocabulary."""
    from loaders.errors import REASONS

    expected = {e.reason for case in built["cases"].values() for e in case.expect.values() if e.reason}
    assert expected <= set(REASONS), expected - set(REASONS)
    assert {"decode", "missing_audio", "transcript", "duplicate_key", "unsafe_name", "truncated", "too_large"} <= expected


GOOD_PIXELS = 32 * 24
"""The good clip's frame size (generator ground truth)."""


@pytest.mark.parametrize("tool", TOOLS)
def test_max_pixels_is_an_option_of_every_tool(built, tool, tmp_path):
    """One pixel under the good clip's 32x24 skips it as too_large; a limit at the huge clip's 4096x2176 lets its
    one frame (0.1 s at 10 fps) through."""
    clean, huge = built["clean"], built["cases"]["over_max_pixels"].shard
    if tool == "loader":
        from loaders.pipeline import make_loader

        with pytest.raises(RuntimeError, match=r"every sample of epoch 0 was skipped \(1 read; skipped by reason: "
                                               r"\{'too_large': 1\}\).*allow_empty_epoch=True"):
            list(make_loader(clean, **LOADER_OPTIONS, max_pixels=GOOD_PIXELS - 1))
        loader = make_loader(clean, **LOADER_OPTIONS, max_pixels=GOOD_PIXELS - 1, allow_empty_epoch=True)
        assert list(loader) == [] and loader.stats.skipped_samples == ((clean, GOOD_KEY, "too_large"),)
        items: dict[str, int] = {}
        for batch in make_loader(huge, **LOADER_OPTIONS, max_pixels=4096 * 2176):
            cu = batch.cu_seqlens_frames.tolist()
            items.update({key: cu[i + 1] - cu[i] for i, key in enumerate(batch.sample_keys)})
        assert items == {GOOD_KEY: CLIP_FRAMES, BAD_KEY: 1}
    elif tool == "preprocess":
        from avalign.preprocess import preprocess

        preprocess(clean, str(tmp_path / "low"), progress=False, max_pixels=GOOD_PIXELS - 1)
        skipped = [json.loads(line) for line in (tmp_path / "low" / "skipped.jsonl").read_text().splitlines()]
        assert [(row["key"], row["reason"]) for row in skipped] == [(GOOD_KEY, "too_large")]
        preprocess(huge, str(tmp_path / "high"), progress=False, max_pixels=4096 * 2176)
        record = json.loads(_read_tar(tmp_path / "high" / "shard-000000.tar")[f"{BAD_KEY}.align.json"])
        assert record["video"]["num_frames"] == 1
    else:
        from avalign.report import run_report

        low = run_report(clean, out_dir=str(tmp_path / "low"), max_pixels=GOOD_PIXELS - 1).report
        assert [(s["key"], s["reason"]) for s in low["skipped"]] == [(GOOD_KEY, "too_large")]
        assert low["summary"]["corrupt"] == 1
        high = run_report(huge, out_dir=str(tmp_path / "high"), max_pixels=4096 * 2176).report
        rows = {row["key"]: row for row in high["clips"]}
        assert rows[BAD_KEY]["container"]["num_frames_from_content"] == 1 and high["skipped"] == []


def test_spans_outside_counted_once_per_sample_and_restored(built):
    """The 1 s clip cut into two 0.5 s windows still counts its 2 outside spans once; a loader restored after
    each batch ends the epoch with the same count."""
    from loaders.pipeline import make_loader

    shard = built["cases"]["spans_beyond_media"].shard
    options = dict(LOADER_OPTIONS, max_items=1, window_seconds=0.5)
    full = make_loader(shard, **options)
    num_batches = len(list(full))
    assert num_batches == 4 and full.stats.spans_outside == 2  # 2 clips x 2 windows, one item per batch
    for saved_after in range(num_batches + 1):
        first = make_loader(shard, **options)
        batches = iter(first)
        for _ in range(saved_after):
            next(batches)
        state = pickle.loads(pickle.dumps(first.state_dict()))
        restored = make_loader(shard, **options)
        restored.load_state_dict(state)
        assert len(list(restored)) == num_batches - saved_after
        assert restored.stats.spans_outside == 2, saved_after


def _link_shard(root: Path) -> str:
    """good + a sample whose media member is a symlink (member_type) + a key with only a caption."""
    path = root / "link_case.tar"
    with tarfile.open(path, "w") as tar:
        for name, data in [(f"{GOOD_KEY}.json", b'{"segments": []}'), (f"{GOOD_KEY}.mp4", b"x" * 100),
                           (f"{BAD_KEY}.json", b'{"segments": []}')]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo(f"{BAD_KEY}.mp4")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
    return str(path)


@pytest.mark.parametrize("case_name", ["duplicate_key", "dotdot_name", "absolute_name", "truncated_tar", "link"])
def test_preprocess_scan_agrees_with_the_shard_reader(built, case_name):
    """preprocess plans a shard (seekable file, or streamed through ``pipe:``) with the loader's drop rules:
    the same samples kept and the same (key, reason) reports, once per sample key."""
    from avalign.preprocess import list_inputs
    from loaders.shards import shard_samples

    shard = _link_shard(built["root"]) if case_name == "link" else built["cases"][case_name].shard
    reports: list[tuple[str, str, str]] = []
    kept = sorted(s["__key__"] for s in shard_samples(shard, report=lambda *r: reports.append(r)))
    assert reports and all(url == shard for url, _, _ in reports)
    for source in (shard, f"pipe:cat {shard}"):
        plan = list_inputs(source)
        assert sorted(s.key for s in plan.samples) == kept, source
        assert [(row["key"], row["reason"]) for row in plan.skipped] == [(key, reason) for _, key, reason in reports]
        with pytest.raises(SampleError) as info:
            list_inputs(source, on_error="raise")
        assert (info.value.key, info.value.reason) == reports[0][1:] and info.value.shard == source
