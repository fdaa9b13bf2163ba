"""``avalign report``: rows against ``measure`` run directly and ffmpeg/ffprobe oracles, the lip-sync sign
conversion at the standards' exact limits, the gate's exit codes, corrupt inputs counted, the HTML page
(parsed, escaped, self-contained) and one headless-Chromium render.

Media oracle: ``synced.mp4`` has white flashes and 1 kHz beeps at the same frame-aligned times;
``late100.mp4`` is the same file with its audio delayed by ``-itsoffset 0.1`` (stream copy), so the
difference of the two measured A/V offsets must be 100 ms.
"""
from __future__ import annotations

import argparse
import importlib.util
import io
import json
import re
import subprocess
import tarfile
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from avalign import measure
from avalign.report import STANDARDS, lipsync_status, run_report, to_standard_offset_ms, within_tolerance
from avalign.report import add_parser
from tests.conftest import REPO, ffmpeg, ffprobe_audio_start

EVENT_SECONDS = (0.52, 1.32, 1.92, 3.12, 3.6, 4.8, 5.52)
"""Multiples of 1/25 s: each flash starts exactly on a frame, together with its beep."""
DELAY_SECONDS = 0.1


def _between(times, length_seconds):
    return "+".join(f"between(t,{t},{t + length_seconds:.3f})" for t in times)


@pytest.fixture(scope="module")
def clips_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("report_media")
    video = f"color=c=0x202020:size=160x120:rate=25,drawbox=x=0:y=0:w=160:h=120:color=white:t=fill:enable='{_between(EVENT_SECONDS, 0.079)}'"
    audio = f"aevalsrc='0.5*sin(2*PI*1000*t)*({_between(EVENT_SECONDS, 0.08)})+0.01*(random(0)-0.5)':s=16000"
    ffmpeg("-f", "lavfi", "-i", video, "-f", "lavfi", "-i", audio, "-t", "6.5", "-c:v", "libx264", "-pix_fmt", "yuv420p",
           "-c:a", "aac", str(d / "synced.mp4"))
    ffmpeg("-i", str(d / "synced.mp4"), "-itsoffset", str(DELAY_SECONDS), "-i", str(d / "synced.mp4"),
           "-map", "0:v", "-map", "1:a", "-c", "copy", str(d / "late100.mp4"))
    # A transcript with one span inside the media and one far past its end (spans outside the media).
    (d / "synced.srt").write_text("1\n00:00:01,000 --> 00:00:02,000\nhello\n\n2\n00:01:00,000 --> 00:01:01,000\nlost\n")
    (d / "corrupt.mp4").write_bytes((d / "synced.mp4").read_bytes()[:3000])  # truncated: header only
    (d / "notes.txt").write_text("not media")
    return d


@pytest.fixture(scope="module")
def truth_file(clips_dir, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("truth") / "truth.json"
    clips = {"synced": {"av_offset_ms": 0.0, "drift_ppm": 0.0, "text_offset_ms": 0.0},
             "late100": {"av_offset_ms": 100.0, "drift_ppm": 0.0, "text_offset_ms": None}}
    path.write_text(json.dumps({"clips": clips}))
    return path


@pytest.fixture(scope="module")
def dir_report(clips_dir, truth_file, tmp_path_factory):
    out = tmp_path_factory.mktemp("report_out")
    return run_report(str(clips_dir), out_dir=str(out), fail_over_ms=50.0, gate_on="av", truth_path=str(truth_file))


@pytest.fixture(scope="module")
def late100_record(clips_dir) -> dict:
    """``measure`` of late100.mp4 (no transcript), run once for the tests that compare against it (copy to change)."""
    return measure(str(clips_dir / "late100.mp4"))


def _rows(result) -> dict:
    return {r["key"]: r for r in result.report["clips"]}


# ---------------------------------------------------------------- standards: signs and exact limits

@pytest.mark.parametrize(
    "av_offset_ms, expected",
    [
        # avalign +: audio late = standard −. BT.1359 detectability +45/−125, acceptability +90/−185, EBU R37 +40/−60.
        (100.0, {"bt1359_detectability": True, "bt1359_acceptability": True, "ebu_r37": False}),
        (125.0, {"bt1359_detectability": True, "bt1359_acceptability": True, "ebu_r37": False}),
        (125.001, {"bt1359_detectability": False, "bt1359_acceptability": True, "ebu_r37": False}),
        (185.0, {"bt1359_detectability": False, "bt1359_acceptability": True, "ebu_r37": False}),
        (185.001, {"bt1359_detectability": False, "bt1359_acceptability": False, "ebu_r37": False}),
        (60.0, {"bt1359_detectability": True, "bt1359_acceptability": True, "ebu_r37": True}),
        (60.001, {"bt1359_detectability": True, "bt1359_acceptability": True, "ebu_r37": False}),
        (-40.0, {"bt1359_detectability": True, "bt1359_acceptability": True, "ebu_r37": True}),
        (-40.001, {"bt1359_detectability": True, "bt1359_acceptability": True, "ebu_r37": False}),
        (-45.0, {"bt1359_detectability": True, "bt1359_acceptability": True, "ebu_r37": False}),
        (-45.001, {"bt1359_detectability": False, "bt1359_acceptability": True, "ebu_r37": False}),
        (-90.0, {"bt1359_detectability": False, "bt1359_acceptability": True, "ebu_r37": False}),
        (-90.001, {"bt1359_detectability": False, "bt1359_acceptability": False, "ebu_r37": False}),
        (0.0, {"bt1359_detectability": True, "bt1359_acceptability": True, "ebu_r37": True}),
        (None, {"bt1359_detectability": None, "bt1359_acceptability": None, "ebu_r37": None}),
    ],
)
def test_lipsync_status_at_exact_limits(av_offset_ms, expected):
    assert lipsync_status(av_offset_ms) == expected


def test_sign_conversion_and_windows():
    assert to_standard_offset_ms(100.0) == -100.0  # audio 100 ms late
    assert to_standard_offset_ms(-30.0) == 30.0  # audio 30 ms early
    assert to_standard_offset_ms(None) is None
    windows = {t.key: t.avalign_range_ms() for t in STANDARDS}
    assert windows == {"bt1359_detectability": (-45.0, 125.0), "bt1359_acceptability": (-90.0, 185.0), "ebu_r37": (-40.0, 60.0)}
    with pytest.raises(ValueError, match="finite"):
        within_tolerance(float("nan"), STANDARDS[0])


# ---------------------------------------------------------------- directory input, measured on the fly

def test_rows_match_measure_run_directly(clips_dir, dir_report, late100_record):
    rows = _rows(dir_report)
    assert set(rows) == {"synced", "late100"}
    for key, transcript in (("synced", str(clips_dir / "synced.srt")), ("late100", None)):
        direct = late100_record if key == "late100" else measure(str(clips_dir / f"{key}.mp4"), transcript=transcript)
        row = rows[key]
        assert row["source"] == "measured"
        for field in ("av_offset_ms", "drift_ppm", "av_confidence", "text_offset_ms", "text_confidence"):
            assert row[field] == direct[field], field
        assert row["spans_outside"] == direct["aligned"]["spans_outside"]
        assert row["container"]["num_frames_from_content"] == direct["video"]["num_frames"]
        assert row["container"]["audio_start_seconds"] == direct["audio"]["start_seconds"]
    assert rows["synced"]["spans_outside"] >= 1  # the span at 60 s is past the 6.5 s clip


def test_itsoffset_delay_is_measured_and_judged(dir_report):
    rows = _rows(dir_report)
    synced, late = rows["synced"]["av_offset_ms"], rows["late100"]["av_offset_ms"]
    assert synced is not None and late is not None
    assert late - synced == pytest.approx(1000 * DELAY_SECONDS, abs=3.0)
    assert abs(synced) <= 5.0  # events are frame-aligned: in sync within the estimator's accuracy
    # ~+100 ms = audio late: within BT.1359 detectability (−125) but outside EBU R37 (−60).
    assert rows["late100"]["standard_offset_ms"] == -late
    assert rows["late100"]["lipsync"] == {"bt1359_detectability": True, "bt1359_acceptability": True, "ebu_r37": False}
    assert rows["synced"]["lipsync"]["ebu_r37"] is True


def test_container_facts_against_ffprobe(clips_dir, dir_report):
    rows = _rows(dir_report)
    first_packet = json.loads(subprocess.check_output(
        ["ffprobe", "-v", "error", "-select_streams", "a:0", "-show_packets", "-read_intervals", "%+#1",
         "-show_entries", "packet=pts_time", "-of", "json", str(clips_dir / "synced.mp4")]))["packets"][0]
    synced = rows["synced"]["container"]
    assert synced["audio_first_packet_seconds"] == pytest.approx(float(first_packet["pts_time"]), abs=1e-6)
    assert synced["priming_ms"] == pytest.approx(64.0, abs=1e-3)  # 1024 AAC priming samples at 16 kHz
    late = rows["late100"]["container"]
    assert late["audio_start_seconds"] == pytest.approx(ffprobe_audio_start(clips_dir / "late100.mp4"), abs=1e-3)
    assert late["start_difference_ms"] == pytest.approx(1000 * (late["audio_start_seconds"] - late["video_start_seconds"]), abs=1e-3)
    assert late["priming_ms"] is None  # the shifted first packet has pts 0.036 s: priming not visible
    assert synced["num_frames_from_header"] == synced["num_frames_from_content"] == 163  # 6.52 s at 25 fps
    assert synced["fps_from_header"] == synced["fps_from_content"] == 25.0 and synced["vfr"] is False


def test_residuals_against_truth(dir_report):
    rows = _rows(dir_report)
    for key, true_av in (("synced", 0.0), ("late100", 100.0)):
        residual = rows[key]["residual"]
        assert residual["av_offset_ms"] == round(rows[key]["av_offset_ms"] - true_av, 3)
        drift = rows[key]["drift_ppm"]  # None when the 6.5 s clip cannot resolve drift (then no residual)
        assert residual["drift_ppm"] == (None if drift is None else round(drift - 0.0, 3))
    assert rows["late100"]["residual"]["text_offset_ms"] is None  # no true value
    summary = dir_report.report["summary"]
    assert summary["num_with_truth"] == 2
    residuals = [rows[k]["residual"]["av_offset_ms"] for k in ("synced", "late100")]
    assert summary["residuals"]["av_offset_ms"]["max_abs"] == pytest.approx(max(abs(r) for r in residuals), abs=1e-3)


def test_corrupt_and_stray_inputs_are_counted(dir_report):
    summary = dir_report.report["summary"]
    assert summary["skipped_by_reason"] == {"decode": 1, "unknown_extension": 1}
    assert summary["corrupt"] == 1 and summary["num_clips"] == 2
    corrupt = next(s for s in dir_report.report["skipped"] if s["reason"] == "decode")
    assert corrupt["key"] == "corrupt" and "DecodeError" in corrupt["message"]


def test_gate_and_files_of_directory_run(dir_report):
    rows = _rows(dir_report)
    gate = dir_report.report["summary"]["gate"]
    assert dir_report.exit_code == 1
    assert [f["key"] for f in gate["failed"]] == ["late100"]
    assert gate["failed"][0]["offset_ms"] == abs(rows["late100"]["av_offset_ms"])
    largest = {k: max(abs(r[f]) for f in ("av_offset_ms", "text_offset_ms") if r[f] is not None) for k, r in rows.items()}
    assert dir_report.report["summary"]["worst"][0]["key"] == max(largest, key=largest.get)
    out = Path(dir_report.out_dir)
    on_disk = json.loads((out / "report.json").read_text())
    assert on_disk == json.loads(json.dumps(dir_report.report))
    for name in ("av_offset_hist.png", "drift_hist.png", "text_offset_hist.png", "offset_vs_duration.png", "av_residual_hist.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name


# ---------------------------------------------------------------- HTML

class _Cells(HTMLParser):
    """Text of every <td> per table id, the <th> texts of each table, and every src and href attribute."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.headers: dict[str, list[str]] = {}
        self.sources: list[str] = []
        self.hrefs: dict[str, str] = {}  # link text → href
        self._table = None
        self._cell = None
        self._href = None

    @property
    def links(self) -> list[str]:
        return self.sources + list(self.hrefs.values())

    def column(self, table: str, header: str) -> int:
        return self.headers[table].index(header)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("src"):
            self.sources.append(attrs["src"])
        if tag == "a" and attrs.get("href"):
            self._href = [attrs["href"], []]
        if tag == "table":
            self._table = attrs.get("id", "")
            self.tables.setdefault(self._table, [])
            self.headers.setdefault(self._table, [])
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "a" and self._href is not None:
            self.hrefs["".join(self._href[1])] = self._href[0]
            self._href = None
        if tag == "th" and self._cell is not None and self._table is not None:
            self.headers[self._table].append("".join(self._cell))
            self.tables[self._table][-1:] = [[]] if self.tables[self._table] else []
            self._cell = None
        if tag == "td" and self._cell is not None:
            self.tables[self._table][-1].append("".join(self._cell))
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if self._href is not None:
            self._href[1].append(data)


def _parse(path: Path) -> _Cells:
    parser = _Cells()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def test_html_holds_the_numbers_and_is_self_contained(dir_report):
    page = _parse(Path(dir_report.out_dir) / "report.html")
    rows = _rows(dir_report)
    clips = {cells[0]: cells for cells in page.tables["clips"] if cells}
    assert set(clips) == set(rows)
    col = lambda name: page.column("clips", name)  # noqa: E731
    for key, row in rows.items():
        assert clips[key][col("av_offset_ms")] == f"{row['av_offset_ms']:g}"
        assert clips[key][col("drift_ppm")] == ("null" if row["drift_ppm"] is None else f"{row['drift_ppm']:g}")  # unresolved drift
        assert clips[key][col("resid. av ms")] == f"{row['residual']['av_offset_ms']:g}"
        assert clips[key][col("words")] == str(row["num_words"])
    standards = [col("BT.1359 det."), col("BT.1359 acc."), col("EBU R37")]
    assert [clips["late100"][i] for i in standards] == ["within", "within", "outside"]
    assert clips["late100"][col("flags")] == "gate, lip-sync"  # over 50 ms and outside EBU R37
    largest = {k: max(abs(r[f]) for f in ("av_offset_ms", "text_offset_ms") if r[f] is not None) for k, r in rows.items()}
    assert [c[0] for c in page.tables["clips"] if c] == sorted(largest, key=lambda k: -largest[k])  # worst first
    assert {c[2] for c in page.tables["skipped"] if c} == {"decode", "unknown_extension"}
    assert page.sources and all(src.startswith("data:image/png;base64,") for src in page.sources)
    # late100 is over the gate and outside EBU R37: its key links to its page, which exists with its figures.
    from avalign.report import clip_page_name

    assert page.hrefs["late100"] == rows["late100"]["page"] == clip_page_name("late100")
    clip_page = Path(dir_report.out_dir) / rows["late100"]["page"]
    assert clip_page.is_file() and rows["late100"]["page"].startswith("clips/late100-")
    assert clip_page.with_name(clip_page.stem + "-waveform.png").read_bytes()[:4] == b"\x89PNG"


# ---------------------------------------------------------------- shards

def _tar(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


EVIL_KEY = "x<img src=x onerror=alert(1)>&"


@pytest.fixture(scope="module")
def preprocessed_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("preprocessed")

    def align(av, drift, text):
        return json.dumps({"av_offset_ms": av, "drift_ppm": drift, "av_confidence": 0.9, "text_offset_ms": text,
                           "text_confidence": 0.8 if text is not None else None,
                           "av_method": "onset_xcorr" if av is not None else "abstain:no_visual_events",
                           "text_method": "vad" if text is not None else "none",
                           "video": {"num_frames": 90, "fps_from_header": 30.0, "fps_from_content": 29.97, "vfr": False,
                                     "start_seconds": 0.0, "num_frames_from_header": 91},
                           "audio": {"sample_rate": 16000, "start_seconds": 0.02, "num_samples": 48480},
                           "aligned": {"spans_outside": 2}, "words": [], "config": {"sample_rate": 16000}}).encode()

    _tar(d / "shard-000000.tar", {
        "a.align.json": align(123.4, 5.0, 40.0), "a.frames.json": b"{}", "a.transcript.json": b"[]",
        "b.align.json": align(None, None, None),
        f"{EVIL_KEY}.align.json": align(-10.0, 0.0, None),
        "c.align.json": b"{not json",
        "d.align.json": align(1.0, 0.0, None), "d.mp4": b"\x00garbage media bytes",  # align.json is used; media not decoded
    })
    truncated = _tar(d / "shard-000001.tar", {"e.align.json": align(2.0, 0.0, None), "f.align.json": align(3.0, 0.0, None)})
    with tarfile.open(truncated) as tar:
        cut = tar.getmembers()[1].offset_data + 10
    truncated.write_bytes(truncated.read_bytes()[:cut])  # cut inside the second member: e is kept, f is lost
    return d


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="avalign")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


def _record_plots(monkeypatch) -> list:
    """From here on in the test, each report run hands its rows' keys to this list instead of drawing the summary
    plots (0.6-0.8 CPU-s a report), for tests about something else. The same kinds of rows are drawn by the tests
    that keep the plotter: measured rows with truth (``dir_report``, its PNGs checked), ``align.json`` rows (the
    no-gate exit-code case), values beside abstentions (``test_distributions_...``), only abstentions (the no-gate
    abstention case) and no rows at all (the first no-media run)."""
    plotted = []
    monkeypatch.setattr("avalign.report._plots.make_plots",  # private: run_report imports it at call time
                        lambda rows: plotted.append([row["key"] for row in rows]) or {})
    return plotted


def _keys(report_json: Path) -> list:
    return [row["key"] for row in json.loads(report_json.read_text())["clips"]]


def test_preprocessed_shards_use_align_json(preprocessed_dir, tmp_path, monkeypatch):
    plotted = _record_plots(monkeypatch)
    result = run_report(str(preprocessed_dir), out_dir=str(tmp_path))
    assert plotted == [[row["key"] for row in result.report["clips"]]]
    rows = _rows(result)
    assert set(rows) == {"a", "b", EVIL_KEY, "d", "e"}
    assert {r["source"] for r in rows.values()} == {"align.json"}
    a = rows["a"]
    assert (a["av_offset_ms"], a["drift_ppm"], a["text_offset_ms"], a["spans_outside"]) == (123.4, 5.0, 40.0, 2)
    assert a["container"]["frame_count_mismatch"] == -1 and a["container"]["start_difference_ms"] == pytest.approx(20.0)
    assert a["container"]["duration_mismatch_ms"] == pytest.approx(1000 * (48480 / 16000 - 90 / 29.97), abs=1e-3)
    assert a["lipsync"] == {"bt1359_detectability": True, "bt1359_acceptability": True, "ebu_r37": False}
    assert rows["d"]["av_offset_ms"] == 1.0 and "container probe failed" in rows["d"]["problems"][0]
    reasons = result.report["summary"]["skipped_by_reason"]
    assert reasons == {"align_json": 1, "truncated": 1}
    assert result.report["summary"]["gate"]["abstained"] == [{"key": "b", "shard": str(preprocessed_dir / "shard-000000.tar"), "fields": ["av_offset_ms"], "reasons": ["no_visual_events"]}]
    html_text = (tmp_path / "report.html").read_text()
    assert "<img src=x" not in html_text and "x&lt;img src=x onerror=alert(1)&gt;&amp;" in html_text
    assert EVIL_KEY in {c[0] for c in _parse(tmp_path / "report.html").tables["clips"] if c}


@pytest.mark.parametrize(
    "options, exit_code",
    [
        ([], 0),                                        # no gate
        (["--fail-over-ms", "123.4"], 0),               # equal is not over
        (["--fail-over-ms", "123.3"], 1),
        (["--fail-over-ms", "39", "--gate-on", "text"], 1),   # a's text offset is 40 ms
        (["--fail-over-ms", "40", "--gate-on", "text"], 0),
        (["--fail-over-ms", "100", "--gate-on", "av"], 1),
    ],
)
def test_gate_exit_codes_null_offsets_do_not_fail(preprocessed_dir, tmp_path, options, exit_code, capsys, monkeypatch):
    # the gate does not reach the summary plots: drawn for these rows by the no-gate case, recorded here
    plotted = _record_plots(monkeypatch) if options else []
    assert _cli(["report", str(preprocessed_dir), "--out", str(tmp_path), "--no-progress", *options]) == exit_code
    if options:
        assert plotted == [[row["key"] for row in json.loads((tmp_path / "report.json").read_text())["clips"]]]
    printed = capsys.readouterr().out
    assert "5 reported, 2 skipped" in printed
    if options:
        abstained = 0 if "text" in options else 1  # b's null text offset: no transcript, so not abstained
        gated = 1 if "text" in options else 5  # only a has a transcript
        assert ("FAIL" if exit_code else "pass") in printed and f"{abstained} of {gated} abstained" in printed


def test_help_has_examples(capsys):
    with pytest.raises(SystemExit):
        _cli(["report", "--help"])
    assert "examples:" in capsys.readouterr().out


def test_raw_shard_is_measured_like_the_file(clips_dir, tmp_path, late100_record, monkeypatch):
    plotted = _record_plots(monkeypatch)
    shard = _tar(tmp_path / "raw-000000.tar", {
        "clip.mp4": (clips_dir / "late100.mp4").read_bytes(),
        "bad.mp4": b"\x00\x00\x00\x18ftypmp42 definitely not a movie",
        "lonely.srt": b"1\n00:00:01,000 --> 00:00:02,000\nhi\n",
    })
    result = run_report(str(shard), out_dir=str(tmp_path / "out"))
    assert plotted == [["clip"]]
    direct = late100_record
    (row,) = result.report["clips"]
    assert row["key"] == "clip" and row["source"] == "measured"
    assert (row["av_offset_ms"], row["drift_ppm"]) == (direct["av_offset_ms"], direct["drift_ppm"])
    assert result.report["summary"]["skipped_by_reason"] == {"decode": 1, "missing_media": 1}


def test_cli_on_error_raise_and_max_pixels(clips_dir, tmp_path, monkeypatch):
    from loaders.errors import SampleError

    plotted = _record_plots(monkeypatch)

    shard = _tar(tmp_path / "raw-000000.tar", {
        "bad.mp4": b"\x00\x00\x00\x18ftypmp42 definitely not a movie",
        "clip.mp4": (clips_dir / "late100.mp4").read_bytes(),
    })
    with pytest.raises(SampleError, match=r"reason=decode") as info:
        _cli(["report", str(shard), "--out", str(tmp_path / "raise"), "--no-progress", "--on-error", "raise"])
    assert (info.value.shard, info.value.key, info.value.reason) == (str(shard), "bad", "decode")
    assert not (tmp_path / "raise" / "report.json").exists()
    assert _cli(["report", str(shard), "--out", str(tmp_path / "small"), "--no-progress", "--max-pixels", str(160 * 120 - 1)]) == 0
    skipped = json.loads((tmp_path / "small" / "report.json").read_text())["skipped"]
    assert [(s["key"], s["reason"]) for s in skipped] == [("bad", "decode"), ("clip", "too_large")]  # 160x120 frames
    assert plotted == [[]]  # the raising run stopped before the plots; the other had no rows


def test_missing_input_raises(tmp_path):
    with pytest.raises(FileNotFoundError, match="input not found"):
        run_report(str(tmp_path / "nope.tar"), out_dir=str(tmp_path / "out"))


def test_a_brace_pattern_matching_no_file_is_an_error(tmp_path, capsys):
    # Before: "0 reported, 3 skipped {'open': 3}", an empty report and exit 0 (preprocess said "does not exist").
    pattern = str(tmp_path / "shard-{000010..000012}.tar")
    with pytest.raises(FileNotFoundError, match="no file matches the pattern"):
        run_report(pattern, out_dir=str(tmp_path / "out"))
    from avalign import cli

    assert cli.main(["report", pattern, "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    assert "no file matches the pattern" in capsys.readouterr().err
    assert not (tmp_path / "out" / "report.json").exists()


# ---------------------------------------------------------------- headless Chromium

@pytest.mark.slow
def test_page_renders_in_headless_chromium(dir_report, tmp_path):
    spec = importlib.util.spec_from_file_location("render_report", REPO / "scripts" / "render_report.py")
    render_report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(render_report)
    if render_report.find_chromium() is None:
        pytest.skip("chromium is not installed (scripts/setup_env.sh installs it)")
    png = render_report.render(str(Path(dir_report.out_dir) / "report.html"), str(tmp_path / "page.png"), width=1280, height=2000)
    from matplotlib.image import imread

    image = imread(png)
    assert image.shape[:2] == (2000, 1280)
    gray = image[..., :3].mean(axis=2)
    assert gray.std() > 0.05  # not a blank page
    # distinct colours (channels rounded to 2 decimals) > 50: text, tables and plots. Each rounded channel is
    # k / 100 exactly, so the colour is coded as one integer (np.unique over rows sorts 2.6 M triples: 3 CPU-s).
    levels = np.rint(np.round(image[..., :3].reshape(-1, 3), 2) * 100).astype(np.int64)
    assert len(np.unique((levels[:, 0] * 101 + levels[:, 1]) * 101 + levels[:, 2])) > 50
    assert (gray < 0.3).mean() > 0.002  # dark text present


# ---------------------------------------------------------------- per-clip pages, looked at in headless Chromium

def _renderer():
    spec = importlib.util.spec_from_file_location("render_report", REPO / "scripts" / "render_report.py")
    render_report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(render_report)
    if render_report.find_chromium() is None:
        pytest.skip("chromium is not installed (scripts/setup_env.sh installs it)")
    return render_report


def _screenshot(html: Path, png: Path, *, width: int, height: int) -> np.ndarray:
    from matplotlib.image import imread

    image = imread(_renderer().render(str(html), str(png), width=width, height=height, timeout_seconds=120))
    return np.round(image[..., :3] * 255).astype(np.int16)


def _mask(image: np.ndarray, hex_colour: str, tolerance: int = 14) -> np.ndarray:
    rgb = np.array([int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)], dtype=np.int16)
    return (np.abs(image - rgb) <= tolerance).all(axis=-1)


def _runs(columns: np.ndarray) -> list[tuple[int, int]]:
    """[start, stop) of consecutive True runs of a 1-D mask."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], columns.astype(np.int8), [0]])))
    return list(zip(edges[::2], edges[1::2]))


TEXT_LATE_SECONDS = 0.05
"""The transcript of the clip-page test stamps each word 50 ms after its beep is heard."""


@pytest.fixture(scope="module")
def clip_page_report(tmp_path_factory):
    """late100.mp4's pictures and beeps (audio 100 ms late) in digital silence, with words stamped at the first three
    beeps' audio times + 50 ms. Beeps are not speech: the words are no dictionary words ("beepone"), so forced
    alignment gives no verdict and energy's answer stands (in digital silence an onset is exact); English words would be
    judged not heard there (``words_not_heard``), over a noise floor not confirmed (``unconfirmed``)."""
    d = tmp_path_factory.mktemp("clip_page_in")
    video = f"color=c=0x202020:size=160x120:rate=25,drawbox=x=0:y=0:w=160:h=120:color=white:t=fill:enable='{_between(EVENT_SECONDS, 0.079)}'"
    audio = f"aevalsrc='0.5*sin(2*PI*1000*t)*({_between(EVENT_SECONDS, 0.08)})':s=16000"
    ffmpeg("-f", "lavfi", "-i", video, "-f", "lavfi", "-i", audio, "-t", "6.5", "-c:v", "libx264", "-pix_fmt", "yuv420p",
           "-c:a", "aac", str(d / "synced_silent.mp4"))
    ffmpeg("-i", str(d / "synced_silent.mp4"), "-itsoffset", str(DELAY_SECONDS), "-i", str(d / "synced_silent.mp4"),
           "-map", "0:v", "-map", "1:a", "-c", "copy", str(d / "late.mp4"))
    (d / "synced_silent.mp4").unlink()
    words = [{"word": w, "start": t + DELAY_SECONDS + TEXT_LATE_SECONDS, "end": t + DELAY_SECONDS + TEXT_LATE_SECONDS + 0.08}
             for w, t in zip(("beepone", "beeptwo", "beepthree"), EVENT_SECONDS)]
    segment = {"text": "beepone beeptwo beepthree", "start": words[0]["start"], "end": words[-1]["end"], "words": words}
    (d / "late.json").write_text(json.dumps({"segments": [segment]}))
    out = tmp_path_factory.mktemp("clip_page_out")
    return run_report(str(d), out_dir=str(out), fail_over_ms=50.0, gate_on="av")


@pytest.fixture(scope="module")
def clip_page_image(clip_page_report, tmp_path_factory) -> np.ndarray:
    """``clip_page_report``'s clip page in headless Chromium at 1400x1800, rendered once for the two tests that read
    it (word boxes and waveform; the estimator's lag curve)."""
    (row,) = clip_page_report.report["clips"]
    png = tmp_path_factory.mktemp("clip_page_png") / "clip.png"
    return _screenshot(Path(clip_page_report.out_dir) / row["page"], png, width=1400, height=1800)


def test_clip_page_word_boxes_and_waveform_in_chromium(clip_page_report, clip_page_image):
    (row,) = clip_page_report.report["clips"]
    assert row["page"].startswith("clips/late-") and row["av_offset_ms"] == pytest.approx(100.0, abs=3.0)
    assert row["text_offset_ms"] == pytest.approx(1000 * TEXT_LATE_SECONDS, abs=10.0)
    page = Path(clip_page_report.out_dir) / row["page"]
    image = clip_page_image
    from avalign.report import COLOURS

    # Waveform: the seven beeps are tall blue blobs; on the video timeline (audio corrected) they start at
    # the flash times, which calibrates pixels per second.
    blue = _mask(image, COLOURS["waveform"]).sum(axis=0) >= 40
    blobs = _runs(blue)
    assert len(blobs) == len(EVENT_SECONDS), blobs
    px_per_second = (blobs[-1][0] - blobs[0][0]) / (EVENT_SECONDS[-1] - EVENT_SECONDS[0])
    # Word boxes: tall orange (as stamped) and green (corrected) runs of columns, three each.
    before = _runs(_mask(image, COLOURS["before"]).sum(axis=0) >= 15)
    after = _runs(_mask(image, COLOURS["after"]).sum(axis=0) >= 15)
    assert len(before) == len(after) == 3, (before, after)
    for (b, _), (a, _), (beep, _) in zip(before, after, blobs):
        assert abs(a - beep) <= 0.012 * px_per_second + 2  # corrected words start on their beeps
        shift = (b - a) / px_per_second
        assert shift == pytest.approx(DELAY_SECONDS + TEXT_LATE_SECONDS, abs=0.012)  # stamped: 150 ms later
    # The frame strip shows the white flash frames (events) and is not blank.
    strip_top = int(np.flatnonzero(_mask(image, COLOURS["after"]).any(axis=1)).max()) + 40
    strip = image[strip_top:strip_top + 200]
    assert (strip.min(axis=-1) >= 250).mean() < 0.97 and (strip.max(axis=-1) <= 40).sum() > 1000  # dark frames drawn
    html_text = page.read_text()
    assert "lag curve not available" in html_text or 'id="lag-curve"' in html_text


def test_clip_page_lag_curve_from_align_json_in_chromium(clips_dir, tmp_path, late100_record, monkeypatch):
    """A preprocessed sample whose align.json carries the estimator's lag curve: curve, peak and threshold drawn."""
    import copy

    plotted = _record_plots(monkeypatch)  # the summary plots; the clip page is drawn

    record = copy.deepcopy(late100_record)
    lags = np.arange(-500.0, 501.0, 1.0)
    record.update(lag_curve_ms=lags.tolist(), lag_curve_score=(12.0 * np.exp(-0.5 * ((lags - 100.0) / 8.0) ** 2)).tolist(),
                  null_threshold=4.0, av_offset_ms=None, av_method="abstain:low_confidence")
    shard = _tar(tmp_path / "shard-000000.tar", {"late.align.json": json.dumps(record).encode(),
                                                 "late.mp4": (clips_dir / "late100.mp4").read_bytes()})
    result = run_report(str(shard), out_dir=str(tmp_path / "out"), fail_over_ms=50.0)
    (row,) = result.report["clips"]
    assert plotted == [["late"]]
    assert row["abstain_reasons"] == {"av_offset_ms": "low_confidence"} and row["page"].startswith("clips/late-")
    assert result.exit_code == 1 and result.report["summary"]["gate"]["reasons"][0]["code"] == "nothing_measured"
    page = tmp_path / "out" / row["page"]
    assert 'id="lag-curve"' in page.read_text()

    image = _screenshot(page, tmp_path / "clip.png", width=1400, height=1800)
    apex_fraction, threshold_height = _lag_curve_geometry(image)
    assert apex_fraction == pytest.approx(600 / 1000, abs=0.01)  # the curve peaks at +100 ms on [-500, +500]
    assert threshold_height == pytest.approx(4.0 / 12.0, abs=0.05)  # the threshold at 4 on a curve peaking at 12


def _lag_curve_geometry(image: np.ndarray) -> tuple[float, float]:
    """From a screenshot of a clip page: where the lag curve peaks, as a fraction of its lag span, and the null
    threshold's height as a fraction of the peak's height above the curve's floor (checks the marks on the way)."""
    from avalign.report import COLOURS

    curve = _mask(image, COLOURS["lag_curve"])
    peak = _mask(image, COLOURS["peak"], tolerance=20)
    threshold = _mask(image, COLOURS["threshold"], tolerance=24)
    assert curve.sum() > 300 and peak.sum() > 30
    rows = np.flatnonzero(curve.any(axis=1))
    floor = int(rows.max())  # the curve's lowest drawn row (legend samples sit below the axes, not in them)
    baseline = int(np.argmax(curve.sum(axis=1)))  # the widest blue row spans the lag axis
    cols = np.flatnonzero(curve[baseline])
    left, right = cols.min(), cols.max()
    above = curve[:floor + 1, left:right + 1]
    apex = int(np.flatnonzero(above.any(axis=1)).min())
    apex_x = left + np.flatnonzero(above[apex]).mean()
    assert floor - apex > 50  # a peak, not a flat line
    peak_cols = np.flatnonzero(peak[:floor + 1, left:right + 1].any(axis=0))
    assert abs(left + peak_cols.mean() - apex_x) <= 6  # the red peak marker sits on the apex
    dashes = np.flatnonzero(threshold[apex:floor + 1, left:right + 1].sum(axis=1) > 0.3 * (right - left))
    assert dashes.size >= 1  # the null threshold: a dashed grey line across the axes
    return (apex_x - left) / (right - left), (floor - (apex + dashes.mean())) / (floor - apex)


def test_clip_table_fits_1400_px_in_chromium(dir_report, tmp_path):
    html_path = Path(dir_report.out_dir) / "report.html"
    wide = tmp_path / "wide.html"  # let the table take the width it needs: no scroll box
    wide.write_text(html_path.read_text().replace(".scroll{overflow-x:auto;max-width:100%}", ".scroll{}"))
    image = _screenshot(wide, tmp_path / "wide.png", width=2400, height=2600)
    ink = image.min(axis=-1) < 200
    assert ink[:, :1400].sum() > 10000  # the page is drawn
    assert ink[:, 1400:].sum() == 0  # nothing, the clip table included, reaches past 1400 px


# ---------------------------------------------------------------- gates that cannot pass on nothing

def _align_record(av, *, method="onset_xcorr", text=None) -> bytes:
    return json.dumps({"av_offset_ms": av, "drift_ppm": None, "av_confidence": 0.9 if av is not None else 0.1,
                       "av_method": method if av is not None else "abstain:no_visual_events",
                       "text_offset_ms": text, "text_method": "none", "video": {"num_frames": 25},
                       "audio": {"sample_rate": 16000, "num_samples": 16000}, "words": []}).encode()


@pytest.mark.parametrize(
    "values, options, exit_code, reason",
    [
        ([None, None, None], ["--fail-over-ms", "60", "--gate-on", "av"], 1, "nothing_measured"),
        ([None, None, 10.0], ["--fail-over-ms", "60"], 1, "too_many_abstentions"),   # 2 of 3 > 0.5
        ([None, None, 10.0], ["--fail-over-ms", "60", "--max-abstain", "0.7"], 0, None),  # 0.67 <= 0.7
        ([None, 10.0, 10.0], ["--fail-over-ms", "60"], 0, None),                     # 1 of 3
        ([None, 10.0], ["--fail-over-ms", "60"], 0, None),                           # 1 of 2 = 0.5 is not over
        ([None, None, None], [], 0, "nothing_measured"),                             # no gate: a warning, exit 0
    ],
)
def test_gate_fails_on_abstentions(tmp_path, capsys, values, options, exit_code, reason, monkeypatch):
    plotted = _record_plots(monkeypatch) if options else None  # the no-gate case draws its rows (all abstained)
    shard = _tar(tmp_path / "shard-000000.tar", {f"k{i}.align.json": _align_record(v) for i, v in enumerate(values)})
    assert _cli(["report", str(shard), "--out", str(tmp_path / "out"), "--no-progress", "--clip-pages", "0", *options]) == exit_code
    if options:
        assert plotted == [[f"k{i}" for i in range(len(values))]] == [_keys(tmp_path / "out" / "report.json")]
    printed = capsys.readouterr().out
    gate = json.loads((tmp_path / "out" / "report.json").read_text())["summary"]["gate"]
    assert [r["code"] for r in gate["reasons"]] == ([reason] if reason else [])
    if reason and options:
        assert f"gate        FAIL ({reason})" in printed
    elif reason:
        assert f"warning     {reason}:" in printed and "FAIL" not in printed
    assert gate["abstained_share"] == pytest.approx(sum(v is None for v in values) / len(values), abs=1e-4)


def test_gate_fails_when_the_input_holds_no_media(tmp_path, capsys, monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _cli(["report", str(empty), "--out", str(tmp_path / "o1"), "--no-progress", "--fail-over-ms", "60"]) == 1
    assert "FAIL (no_media)" in capsys.readouterr().out
    plotted = _record_plots(monkeypatch)  # no rows in the next two runs either: drawn by the first
    (empty / "notes.txt").write_text("not media")  # a stray file is no media either
    assert _cli(["report", str(empty), "--out", str(tmp_path / "o2"), "--no-progress", "--fail-over-ms", "60"]) == 1
    assert "FAIL (no_media)" in capsys.readouterr().out
    (empty / "broken.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42 not a movie")  # media, but nothing measured
    assert _cli(["report", str(empty), "--out", str(tmp_path / "o3"), "--no-progress", "--fail-over-ms", "60"]) == 1
    assert "FAIL (nothing_measured)" in capsys.readouterr().out
    assert plotted == [[], []]


def test_report_on_preprocessed_output_reads_skips_and_totals(clips_dir, tmp_path, capsys, monkeypatch):
    from avalign.preprocess import preprocess

    out = tmp_path / "pre"
    result = preprocess(str(clips_dir), str(out), progress=False, timeout_seconds=None)  # no watchdog fork per sample
    listed = [json.loads(line) for line in (out / "skipped.jsonl").read_text().splitlines()]
    assert result.num_samples == 2 and [(r["key"], r["reason"]) for r in listed] == [("corrupt", "decode"), ("notes", "missing_media")]
    manifest = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
    plotted = _record_plots(monkeypatch)
    assert _cli(["report", str(out), "--out", str(tmp_path / "rep"), "--no-progress"]) == 0
    assert plotted == [_keys(tmp_path / "rep" / "report.json")] and len(plotted[0]) == 2
    report = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert [(s["key"], s["reason"], s["shard"]) for s in report["skipped"]] == [(r["key"], r["reason"], r["input"]) for r in listed]
    summary = report["summary"]
    assert summary["num_skipped"] == 2 and summary["corrupt"] == 1
    assert summary["num_words"] == sum(r["num_words"] for r in manifest)
    assert summary["total_hours"] == pytest.approx(sum(r["duration"] for r in manifest) / 3600, abs=1e-4)
    printed = capsys.readouterr().out
    assert "2 reported, 2 skipped {'decode': 1, 'missing_media': 1}" in printed
    assert f"{summary['num_words']} words" in printed and summary["num_words"] >= 1  # synced.srt's "hello"
    page = _parse(tmp_path / "rep" / "report.html")
    assert [c[2] for c in page.tables["skipped"] if c] == ["decode", "missing_media"]


def _png_pixels(path: Path) -> np.ndarray:
    from matplotlib.image import imread

    return np.round(imread(str(path))[..., :3] * 255).astype(np.int16)


def test_distributions_show_values_and_abstentions_side_by_side(tmp_path):
    """Two answered A/V offsets and three abstentions (two reasons): blue bars left, grey bars right, no "no values"."""
    from avalign.report import ABSTAIN_COLOUR, VALUE_COLOUR

    members = {"a.align.json": _align_record(10.0), "b.align.json": _align_record(30.0),
               "c.align.json": _align_record(None), "d.align.json": _align_record(None)}
    other = json.loads(_align_record(None))
    other["av_method"] = "abstain:low_confidence"
    members["e.align.json"] = json.dumps(other).encode()
    shard = _tar(tmp_path / "shard-000000.tar", members)
    result = run_report(str(shard), out_dir=str(tmp_path / "out"), clip_pages=0)
    assert result.report["summary"]["abstain_reasons"]["av_offset_ms"] == {"low_confidence": 1, "no_visual_events": 2}
    image = _png_pixels(tmp_path / "out" / "av_offset_hist.png")
    width = image.shape[1]
    blue, grey = _mask(image, VALUE_COLOUR, 6), _mask(image, ABSTAIN_COLOUR, 6)
    blue_bars, grey_bars = blue.sum(axis=0) >= 20, grey.sum(axis=0) >= 20  # bars are tall; text and ticks are not
    blue_cols, grey_cols = np.flatnonzero(blue_bars), np.flatnonzero(grey_bars)
    assert blue_cols.size and grey_cols.size and blue_cols.max() < grey_cols.min()  # values left, abstentions right
    assert grey_cols.min() > 0.7 * width
    grey_runs = _runs(grey_bars)
    assert len(grey_runs) == 2  # one bar per reason
    heights = [int(grey[:, a:b].sum(axis=0).max()) for a, b in grey_runs]
    assert heights[0] == pytest.approx(2 * heights[1], rel=0.05)  # no_visual_events (2) twice low_confidence (1)
    assert len(_runs(blue_bars)) == 2  # two answered values, two bars


def test_clip_page_names_are_stable_and_safe():
    from avalign.report import clip_page_name

    name = clip_page_name(EVIL_KEY)
    assert name == clip_page_name(EVIL_KEY) and name.startswith("clips/x_img_src_x_onerror_alert_1-") and name.endswith(".html")
    assert clip_page_name("../../etc/passwd").startswith("clips/etc_passwd-")
    assert clip_page_name("a", taken={clip_page_name("a")}).endswith("-2.html")
    assert clip_page_name("a/b") != clip_page_name("a_b")  # same slug, different keys: the hash tells them apart


def test_progress_total_counts_clips_without_reading_media(clips_dir, preprocessed_dir, tmp_path):
    from avalign.report import count_clips

    assert count_clips(str(clips_dir)) == 3  # synced, late100, corrupt (notes.txt is no clip)
    assert count_clips(str(preprocessed_dir / "shard-000000.tar")) == 5  # a, b, c, d, evil key; c's align.json is broken
    assert count_clips(str(preprocessed_dir)) is None  # shard-000001.tar is truncated: unknown, not a wrong total
    assert count_clips(str(preprocessed_dir / "shard-{000000..000001}.tar")) is None  # patterns are not expanded


def test_report_progress_lines_when_stderr_is_not_a_terminal(preprocessed_dir, tmp_path, capsys, monkeypatch):
    plotted = _record_plots(monkeypatch)
    assert _cli(["report", str(preprocessed_dir / "shard-000000.tar"), "--out", str(tmp_path)]) == 0
    assert plotted == [_keys(tmp_path / "report.json")] and len(plotted[0]) == 4  # c's align.json is broken
    err = capsys.readouterr().err
    assert "report: 5/5 clip (100%)" in err and "ETA 0 s" in err and "\r" not in err
    assert "clip pages: 2/2 page (100%)" in err  # a (outside EBU R37) and b (abstained)


def test_clip_page_draws_the_estimators_own_lag_curve(clip_page_report, clip_page_image):
    """Once the estimator exposes its lag curve (``AVEstimate.lag_curve_ms``), a measured clip's page draws it,
    peaking at the clip's measured offset."""
    from aligner import AVEstimate

    if "lag_curve_ms" not in AVEstimate.__dataclass_fields__:
        pytest.skip("this estimator exposes no lag curve (AVEstimate.lag_curve_ms)")
    (row,) = clip_page_report.report["clips"]
    page = Path(clip_page_report.out_dir) / row["page"]
    assert 'id="lag-curve"' in page.read_text()
    import loaders
    from aligner import estimate_av_offset
    from avalign import read_video_for_estimation

    media = str(Path(clip_page_report.report["input"]) / "late.mp4")
    estimate = estimate_av_offset(read_video_for_estimation(media, name=media)[0], loaders.read_audio(media))
    lags = np.asarray(estimate.lag_curve_ms)
    apex_fraction, _ = _lag_curve_geometry(clip_page_image)
    peak_ms = float(lags[np.argmax(estimate.lag_curve_score)])
    assert peak_ms == pytest.approx(row["av_offset_ms"], abs=10.0)
    assert apex_fraction == pytest.approx((peak_ms - lags.min()) / (lags.max() - lags.min()), abs=0.01)


def test_caption_only_transcript_boxes_move_by_the_measured_offsets(clips_dir):
    """synced.srt has spans only (no word times): the corrected boxes are its spans moved by text and A/V offsets."""
    from avalign.report import gather_clip_view
    from avalign.report import ClipInput

    clip = ClipInput(key="synced", shard=str(clips_dir), media=str(clips_dir / "synced.mp4"),
                     media_name=str(clips_dir / "synced.mp4"), transcript=str(clips_dir / "synced.srt"),
                     transcript_name=str(clips_dir / "synced.srt"))
    record = {"av_offset_ms": 40.0, "drift_ppm": 0.0, "text_offset_ms": 100.0, "words": []}
    view = gather_clip_view(clip, record)
    assert [(b.text, b.start_seconds, b.stop_seconds) for b in view.words_before] == [("hello", 1.0, 2.0), ("lost", 60.0, 61.0)]
    assert [(b.text, round(b.start_seconds, 6), round(b.stop_seconds, 6)) for b in view.words_after] == [
        ("hello", 0.86, 1.86), ("lost", 59.86, 60.86)]  # 1.0 − 0.100 (stamps late) − 0.040 (audio late)
    assert view.audio_shift_ms == 40.0
    column_seconds = view.envelope_seconds[1] - view.envelope_seconds[0]
    first_sample = view.envelope_seconds[0] - column_seconds / 2  # column times are their centres
    assert first_sample == pytest.approx(ffprobe_audio_start(clips_dir / "synced.mp4") - 0.040, abs=1e-3)  # audio moved 40 ms earlier


def test_an_abstention_shows_no_confidence_beside_it(tmp_path, monkeypatch):
    """An ``ambiguous_peak`` abstains with av_confidence 1.0 (the best lag's match strength: another lag matches as
    well). The HTML table shows a dash there, the figure named in its title; an answer shows its confidence; report.json
    keeps both figures (its contract)."""
    _record_plots(monkeypatch)
    abstained = json.loads(_align_record(None))
    abstained.update(av_confidence=1.0, av_method="abstain:ambiguous_peak")
    shard = _tar(tmp_path / "shard-000000.tar", {"answered.align.json": _align_record(12.0),
                                                 "ambiguous.align.json": json.dumps(abstained).encode()})
    assert _cli(["report", str(shard), "--out", str(tmp_path / "out"), "--no-progress", "--clip-pages", "0"]) == 0
    rows = {r["key"]: r for r in json.loads((tmp_path / "out" / "report.json").read_text())["clips"]}
    assert rows["ambiguous"]["av_confidence"] == 1.0 and rows["answered"]["av_confidence"] == 0.9
    html = (tmp_path / "out" / "report.html").read_text()
    cells = {key: re.search(rf">{key}</[a-z]+></td>(.*?)</tr>", html).group(1) for key in rows}
    conf = {key: re.findall(r"<td[^>]*>(.*?)</td>", cells[key])[1] for key in rows}
    assert conf["answered"] == "0.9"
    assert conf["ambiguous"].endswith(">–</span>") and "match strength 1.0, not a confidence" in conf["ambiguous"]


def test_clip_page_says_why_an_estimate_abstained(clips_dir, tmp_path, late100_record, monkeypatch):
    """An abstention's found / needed / best guess / hint from align.json reach report.json (``abstain_details``) and
    the clip page: its lag curve alone can read as an answer (an ``ambiguous_peak``'s rival lag may lie outside the
    plotted range)."""
    import copy
    import html as html_lib

    _record_plots(monkeypatch)
    record = copy.deepcopy(late100_record)
    why = {"reason": "ambiguous_peak", "found": "the most significant lag (+99 ms) matches 8.0 visual events, another "
                                               "lag 7.0: periodic or repeated events",
           "needed": "a best lag matching at least 1.25x more events than any other", "best_guess_ms": 99.4,
           "hint": "events that recur at one interval cannot date the audio; add an irregular event"}
    record.update(av_offset_ms=None, av_confidence=1.0, av_method="abstain:ambiguous_peak", av_abstain=why)
    shard = _tar(tmp_path / "shard-000000.tar", {"periodic.align.json": json.dumps(record).encode(),
                                                 "periodic.mp4": (clips_dir / "late100.mp4").read_bytes()})
    result = run_report(str(shard), out_dir=str(tmp_path / "out"))
    (row,) = result.report["clips"]
    assert row["abstain_details"] == {"av_offset_ms": {k: why[k] for k in ("found", "needed", "best_guess_ms", "hint")}}
    page = html_lib.unescape((tmp_path / "out" / row["page"]).read_text())
    for key in ("found", "needed", "hint"):
        assert why[key] in page, key
    assert "99.4" in page and "best lag's match strength (abstained: not a confidence)" in page
