"""A raw shard read with ``estimate=False`` says, once per process, that its clips are loaded with no correction.

Before: no offset was applied and nothing said so (README: "no warning says so"); users of raw shards with the default
options trained on clips whose words sat up to 4 frames off. Each case runs in a fresh interpreter, because the
warning is once per process.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARDS = ROOT / "sample_data" / "shards" / "shard-{000000..000001}.tar"
MESSAGE = "has no align.json and estimate=False"

_SCRIPT = """
import sys, loaders
ds = loaders.make_dataset(sys.argv[1], seed=0, estimate=sys.argv[2] == "1", budgets=(300, 160_000, 512),
                          window_seconds=2.0, frame_size=(32, 32))
keys = sorted({k.split("@")[0] for batch in ds for k in batch.sample_keys})
print("KEYS", " ".join(keys))
"""


def _run(estimate: bool) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-c", _SCRIPT, str(SHARDS), "1" if estimate else "0"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.timeout(600)
def test_raw_shards_without_estimate_say_once_that_no_offset_is_applied():
    run = _run(estimate=False)
    assert run.returncode == 0, run.stderr
    loaded = run.stdout.split("KEYS", 1)[1].split()
    assert len(loaded) == 6, run.stdout  # every sample of the two shards is loaded, uncorrected, not skipped
    lines = [line for line in run.stderr.splitlines() if MESSAGE in line]
    assert len(lines) == 1, run.stderr  # once per process, not once per sample
    line = lines[0]
    assert "shard-00000" in line and any(key in line for key in loaded)  # names the shard and the sample
    assert "avalign preprocess" in line and "estimate=True" in line  # and both remedies
    assert "transcript offset" in line  # the first sample of shard 0 (clip00) has a transcript


@pytest.mark.timeout(600)
def test_raw_shards_with_estimate_do_not_get_the_warning():
    run = _run(estimate=True)
    assert run.returncode == 0, run.stderr
    assert len(run.stdout.split("KEYS", 1)[1].split()) == 6
    assert MESSAGE not in run.stderr
