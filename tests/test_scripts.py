"""The scripts a user copies or runs on another machine work here: the training example learns, the GPU
check's CPU parts run (so a lent GPU machine is not wasted on a trivial bug)."""
import json
import re
import runpy
import subprocess
import sys

import pytest

from conftest import REPO, sample_truth


def _losses(printed: str) -> list[float]:
    return [float(x) for x in re.findall(r"loss ([0-9.]+)$", printed, flags=re.MULTILINE)]


def _train(out, *args: str) -> list[float]:
    """The training example in a new process."""
    run = subprocess.run([sys.executable, str(REPO / "scripts" / "train_example.py"), "--out", str(out), *args],
                         capture_output=True, text=True, cwd=REPO, timeout=400)
    assert run.returncode == 0, run.stderr[-2000:]
    return _losses(run.stdout)


def _train_here(out, monkeypatch, capsys, *args: str) -> list[float]:
    """The training example run as ``__main__`` in this process (its DataLoader workers are forks of this process):
    it exits 0; the losses it printed. The thread count it sets is given back afterwards."""
    import torch

    argv = [str(REPO / "scripts" / "train_example.py"), "--out", str(out), *args]
    monkeypatch.setattr(sys, "argv", argv)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the script puts the repository first on it
    threads = torch.get_num_threads()
    try:
        with pytest.raises(SystemExit) as exit_info:
            runpy.run_path(argv[0], run_name="__main__")
    finally:
        torch.set_num_threads(threads)
    assert exit_info.value.code == 0
    return _losses(capsys.readouterr().out)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_train_example_learns_and_resumes_byte_identically(tmp_path, monkeypatch, capsys):
    """60 steps through StatefulDataLoader with 2 workers over three text layouts: the loss falls, and the
    checkpoint written after step 50 (mid-epoch: 9 batches an epoch), resumed in a new process, gives the
    same losses as the run's own steps 51-60 (across an epoch boundary) and the same final weights. (The run
    itself is the script as ``__main__`` in this process, which has torch and the readers imported already;
    the resume is a new interpreter running the script, as after a restart.)"""
    import torch

    full = _train_here(tmp_path, monkeypatch, capsys, "--steps", "60", "--num-workers", "2", "--save-at", "50",
                       "--keep-going")
    assert len(full) == 60 and all(loss == loss for loss in full)
    first, last = sum(full[:10]) / 10, sum(full[-10:]) / 10
    assert last < 0.6 * first, (first, last)
    final = torch.load(tmp_path / "final.pt")
    tail = _train(tmp_path, "--steps", "60", "--num-workers", "2", "--resume", str(tmp_path / "ckpt.pt"))
    assert tail == full[50:]  # printed to 6 decimals; the weights below are compared exactly
    resumed = torch.load(tmp_path / "final.pt")
    assert all(torch.equal(final[name], resumed[name]) for name in final)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_gpu_check_cpu_parts_run(tmp_path, monkeypatch, capsys):
    """Run as ``__main__`` in this process (the script is plain Python; the training example above is the
    subprocess run of a script): it exits 0, prints its JSON and writes the same to ``--out``. With CUDA the
    script also runs its CUDA parts: then in a child, so that this test process never initialises CUDA."""
    import torch

    sample_truth()
    out = tmp_path / "gpu.json"
    argv = [str(REPO / "scripts" / "gpu_check.py"), "--cpu-smoke", "--out", str(out)]
    if torch.cuda.is_available():
        run = subprocess.run([sys.executable, *argv], capture_output=True, text=True, cwd=REPO, timeout=230)
        assert run.returncode == 0, run.stderr[-2000:]
        printed = run.stdout
    else:
        monkeypatch.setattr(sys, "argv", argv)
        monkeypatch.setattr(sys, "path", list(sys.path))  # the script puts the repository first on it
        with pytest.raises(SystemExit) as exit_info:
            runpy.run_path(argv[0], run_name="__main__")
        assert exit_info.value.code == 0
        printed = capsys.readouterr().out
    result = json.loads(printed[printed.index("{"):])
    assert result == json.loads(out.read_text())
    assert result["failures"] == [] and result["cpu_frames_per_second"] > 0
