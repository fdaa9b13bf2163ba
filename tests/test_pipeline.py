"""End to end: raw sample shards → `avalign preprocess` → make_loader gives the same words as estimating on the fly."""
import glob

import pytest

import loaders
from avalign.preprocess import preprocess
from conftest import SAMPLE_DATA, sample_truth


def _words_by_key(urls, *, estimate: bool) -> dict:
    loader = loaders.make_loader(urls, seed=0, estimate=estimate, budgets=(600, 400_000, 512), window_seconds=None)
    out = {}
    for batch in loader:
        cu_f, cu_s = batch.cu_seqlens_frames.tolist(), batch.cu_seqlens_samples.tolist()
        rows = batch.word_spans[: batch.num_words].tolist()
        for i, key in enumerate(batch.sample_keys):
            out[key] = [
                (batch.word_texts[r], row[1] - cu_f[i], row[2] - cu_f[i], row[3] - cu_s[i], row[4] - cu_s[i])
                for r, row in enumerate(rows)
                if row[0] == i
            ]
    assert not loader.stats.skipped, loader.stats.skipped_samples
    return out


@pytest.mark.timeout(120)
def test_preprocessed_shards_load_like_raw_ones(tmp_path):
    truth = sample_truth()
    raw = sorted(glob.glob(str(SAMPLE_DATA / "shards" / "*.tar")))
    # Measured in this process (no sample watchdog: what is checked is align.json, not the watchdog's transport).
    preprocess("::".join(raw), str(tmp_path / "out"), workers=1, progress=False, timeout_seconds=None)
    pre = sorted(glob.glob(str(tmp_path / "out" / "shard-*.tar")))
    on_the_fly = _words_by_key(raw, estimate=True)
    from_align_json = _words_by_key(pre, estimate=False)  # values come from align.json, nothing estimated
    assert sorted(on_the_fly) == sorted(from_align_json) == sorted(truth)
    for key in truth:
        assert from_align_json[key] == on_the_fly[key], key
    # Word-level transcripts: every word's first frame is the first frame at or after its TRUE start.
    import numpy as np

    for key in ("clip00", "clip03"):
        pts = np.asarray([f["best_effort_timestamp_time"] for f in __import__("json").load(open(SAMPLE_DATA / truth[key]["ffprobe_frames"]))["frames"]], dtype=float)
        for (text, f0, _, _, _), true in zip(from_align_json[key], truth[key]["words"]):
            expected = int(np.searchsorted(pts, true["start_seconds"] - 0.002, side="left"))
            assert abs(f0 - expected) <= 1, (key, text, f0, expected)


def test_video2dataset_layout_reads_as_it_is(tmp_path, media_dir):
    """video2dataset writes key.mp4 + key.json (metadata, not a transcript) + key.txt (caption): the loader
    and the report take the clip, and no sample is skipped as a bad transcript."""
    import io
    import json
    import tarfile

    from avalign.report import run_report

    meta = json.dumps({"url": "http://example.invalid/v.mp4", "key": "000000000", "status": "success",
                       "caption": "a test pattern", "error_message": None}).encode()
    shard = tmp_path / "00000.tar"
    with tarfile.open(shard, "w") as tar:
        for name, data in (("000000000.mp4", (media_dir / "cfr30.mp4").read_bytes()), ("000000000.json", meta),
                           ("000000000.txt", b"a test pattern")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    loader = loaders.make_loader(str(shard), seed=0, budgets=(200, 100_000, 64), window_seconds=None)
    keys = [k for batch in loader for k in batch.sample_keys]
    assert keys == ["000000000"] and not loader.stats.skipped
    run_report(str(shard), out_dir=str(tmp_path / "report"), progress=False)
    rows = json.loads((tmp_path / "report" / "report.json").read_text())
    assert [r["key"] for r in rows["clips"]] == ["000000000"] and not rows["skipped"]
