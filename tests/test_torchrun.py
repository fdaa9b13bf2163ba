"""make_loader under torchrun: 2 processes, gloo on CPU, a DDP step per batch; uneven shards never hang.

The shards are the loader tests' uneven set (``tests/loader_shards.py``: 3 shards, so one rank reads two and the
other one, with a corrupt sample, a bad transcript and a sample without video among them); the oracle is the
windows the generator made."""
import json
import os
import socket
import sys

import pytest

from conftest import REPO, collector_on_new_objects
from tests.loader_shards import BUDGETS, WINDOW_SECONDS, write_loader_shards


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


MODES = ("pad", "drop")


def _torchrun(argv: list[str], log: str) -> None:
    """torchrun's own entry point (``torch.distributed.run.main``, what the ``torchrun`` command calls), in a forked
    child of this test process: the launcher starts at once (torch is imported here already) and its thread name and
    signal handlers stay in the child; the ranks it starts are new interpreters, as under the command. The launcher's
    and the ranks' output go to ``log``."""
    from torch.distributed.run import main

    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    for target in (1, 2):
        os.dup2(fd, target)
    sys.stdout = sys.stderr = open(log, "a")  # not pytest's capture objects
    main(argv)


@pytest.fixture(scope="module")
def ranks(tmp_path_factory) -> dict:
    """One torchrun job, 2 ranks, one epoch per ``even_batches`` mode in turn: the expected windows per key, and
    mode → both ranks' results."""
    import multiprocessing

    from loaders.media import heap_frozen_for_fork

    shards = write_loader_shards(tmp_path_factory.mktemp("torchrun_shards"))
    out = tmp_path_factory.mktemp("torchrun")
    pattern = shards["paths"][0].replace("shard-000000.tar", f"shard-{{000000..{len(shards['paths']) - 1:06d}}}.tar")
    argv = ["--nproc-per-node", "2", "--master-addr", "127.0.0.1", "--master-port", str(_free_port()),
            str(REPO / "scripts" / "ddp_example.py"), pattern, str(out),
            "--even-batches", *MODES, "--budgets", *map(str, BUDGETS), "--window-seconds", str(WINDOW_SECONDS)]
    log = out / "torchrun.log"
    launcher = multiprocessing.get_context("fork").Process(target=_torchrun, args=(argv, str(log)))
    with collector_on_new_objects(), heap_frozen_for_fork():  # the child never frees an inherited decoder; the
        launcher.start()  # collection before the fork walks only what this fixture made
    launcher.join(timeout=170)
    if launcher.is_alive():
        launcher.kill()
        launcher.join()
    assert launcher.exitcode == 0, log.read_text()[-3000:]
    results = {mode: [json.loads((out / f"rank{r}-{mode}.json").read_text()) for r in range(2)] for mode in MODES}
    return {"expected": shards["expected"], **results}


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.parametrize("even", MODES)
def test_two_ranks_under_torchrun(ranks, even):
    expected = sorted(f"{k}@{i}" for k, n in ranks["expected"].items() for i in range(n))
    ranks = ranks[even]
    assert [r["world_size"] for r in ranks] == [2, 2] and [r["rank"] for r in ranks] == [0, 1]
    assert ranks[0]["batches"] == ranks[1]["batches"] > 0  # same number of DDP steps: nothing hung
    keys = [[k for batch in r["keys"] for k in batch] for r in ranks]
    clips = [{k.split("@")[0] for k in rank_keys} for rank_keys in keys]
    assert not clips[0] & clips[1]  # each shard read by one rank only
    if even == "pad":  # nothing lost: every window once; the short rank yields empty batches
        assert sorted(keys[0] + keys[1]) == expected
        assert any(batch == [] for r in ranks for batch in r["keys"])
    else:  # the long rank's tail is dropped and counted
        assert len(keys[0]) + len(keys[1]) < len(expected) and max(r["dropped"] for r in ranks) > 0
        assert set(keys[0] + keys[1]) < set(expected)
