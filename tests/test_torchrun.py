"""make_loader under torchrun: 2 processes, gloo on CPU, a DDP step per batch; uneven shards never hang."""
import json
import socket
import subprocess
import sys

import pytest

from conftest import REPO, SAMPLE_DATA, sample_truth


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.parametrize("even", ["pad", "drop"])
def test_two_ranks_under_torchrun(tmp_path, even):
    truth = sample_truth()
    shards = str(SAMPLE_DATA / "shards" / "shard-{000000..000001}.tar")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-addr", "127.0.0.1",
           "--master-port", str(_free_port()), str(REPO / "scripts" / "ddp_example.py"), shards, str(tmp_path),
           "--even-batches", even]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=170, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    assert [r["world_size"] for r in ranks] == [2, 2]
    assert ranks[0]["batches"] == ranks[1]["batches"] > 0  # same number of DDP steps: nothing hung
    seen = [{k.split("@")[0] for batch in r["keys"] for k in batch} for r in ranks]
    assert not seen[0] & seen[1]  # each shard read by one rank only
    if even == "pad":  # nothing lost
        assert seen[0] | seen[1] == set(truth)
