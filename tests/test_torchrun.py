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


MODES = ("pad", "drop")


@pytest.fixture(scope="module")
def ranks(tmp_path_factory) -> dict:
    """One torchrun job, 2 ranks, one epoch per ``even_batches`` mode in turn: mode → both ranks' results."""
    sample_truth()
    out = tmp_path_factory.mktemp("torchrun")
    shards = str(SAMPLE_DATA / "shards" / "shard-{000000..000001}.tar")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-addr", "127.0.0.1",
           "--master-port", str(_free_port()), str(REPO / "scripts" / "ddp_example.py"), shards, str(out),
           "--even-batches", *MODES]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=170, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {mode: [json.loads((out / f"rank{r}-{mode}.json").read_text()) for r in range(2)] for mode in MODES}


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.parametrize("even", MODES)
def test_two_ranks_under_torchrun(ranks, even):
    truth = sample_truth()
    ranks = ranks[even]
    assert [r["world_size"] for r in ranks] == [2, 2] and [r["rank"] for r in ranks] == [0, 1]
    assert ranks[0]["batches"] == ranks[1]["batches"] > 0  # same number of DDP steps: nothing hung
    seen = [{k.split("@")[0] for batch in r["keys"] for k in batch} for r in ranks]
    assert not seen[0] & seen[1]  # each shard read by one rank only
    if even == "pad":  # nothing lost
        assert seen[0] | seen[1] == set(truth)
