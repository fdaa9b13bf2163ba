"""Forked pipeline workers start with what they need: ``make_dataset`` / ``make_loader`` import the readers'
dependencies and build the pocketsphinx decoder in the building process (``loaders.pipeline._preload``), so a
DataLoader worker forked at each epoch's ``iter()`` imports nothing and builds no decoder on its way through the
epoch. Checked in a fresh interpreter (nothing else imported them), on the sample shards, whose SRT and WebVTT
captions are force-aligned in the workers.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO

pytest.importorskip("pocketsphinx")
pytest.importorskip("torchcodec")

SHARDS = str(REPO / "sample_data" / "shards" / "shard-{000000..000001}.tar")
HEAVY = ("av", "soxr", "pysubs2", "webvtt", "praatio", "pocketsphinx", "torchcodec")
"""Third-party modules the readers and the forced aligner import inside the functions that use them."""

PROBE = """
import json, sys
import torch
import loaders
from aligner.estimators import shared_decoder

HEAVY = {heavy!r}
def heavy_loaded():
    return sorted(m for m in sys.modules if m.split(".")[0] in HEAVY)

report = {{"after_import": heavy_loaded()}}
loaders.make_loader({shards!r}, seed=0, num_workers=2, multiprocessing_context="spawn")
report["after_spawn_loader"] = heavy_loaded()
report["decoders_after_spawn_loader"] = shared_decoder.cache_info().currsize
dataset = loaders.make_dataset({shards!r}, seed=0)
report["after_make_dataset"] = heavy_loaded()
report["decoders_after_make_dataset"] = shared_decoder.cache_info().currsize

class Probe(torch.utils.data.IterableDataset):
    def __iter__(self):
        modules, info = set(sys.modules), shared_decoder.cache_info()
        words = sum(len(batch.word_texts) for batch in dataset)
        after = shared_decoder.cache_info()
        yield {{"new_modules": sorted(set(sys.modules) - modules), "decoders_built": after.misses - info.misses,
                "decoder_uses": after.hits - info.hits, "words": words}}

report["workers"] = list(torch.utils.data.DataLoader(Probe(), batch_size=None, num_workers=2))
print(json.dumps(report))
"""


def test_forked_dataloader_workers_import_nothing_and_build_no_decoder():
    code = PROBE.format(heavy=HEAVY, shards=SHARDS)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["after_import"] == []  # a plain `import loaders` stays light
    # Spawned workers would load everything again whatever this process did: make_loader does not preload.
    assert report["after_spawn_loader"] == [] and report["decoders_after_spawn_loader"] == 0
    assert {m.split(".")[0] for m in report["after_make_dataset"]} == set(HEAVY)
    assert "torchcodec._core" in report["after_make_dataset"]  # torchcodec's ops registered before the fork
    assert report["decoders_after_make_dataset"] == 1
    workers = report["workers"]
    assert len(workers) == 2
    for worker in workers:
        assert worker["new_modules"] == [], "a worker imported these itself: add them to the pipeline's preload"
        assert worker["decoders_built"] == 0
        assert worker["decoder_uses"] >= 1 and worker["words"] > 0  # it did force-align captions
