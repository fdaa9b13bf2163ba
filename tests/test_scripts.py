"""The scripts a user copies or runs on another machine work here: the training example learns, the GPU
check's CPU parts run (so a lent GPU machine is not wasted on a trivial bug)."""
import json
import re
import subprocess
import sys

import pytest

from conftest import REPO, sample_truth


@pytest.mark.timeout(240)
def test_train_example_trains_on_every_sample_clip():
    sample_truth()
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "train_example.py")], capture_output=True, text=True,
                         cwd=REPO, timeout=230)
    assert out.returncode == 0, out.stderr[-2000:]
    losses = [float(x) for x in re.findall(r"loss ([0-9.]+)", out.stdout)]
    assert len(losses) >= 3 and all(loss == loss for loss in losses)  # ran several steps, no NaN
    assert "skipped={}" in out.stdout  # every sample clip was used


@pytest.mark.timeout(240)
def test_gpu_check_cpu_parts_run(tmp_path):
    sample_truth()
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "gpu_check.py"), "--cpu-smoke", "--out", str(tmp_path / "gpu.json")],
                         capture_output=True, text=True, cwd=REPO, timeout=230)
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout[out.stdout.index("{"):])
    assert result["failures"] == [] and result["cpu_frames_per_second"] > 0
