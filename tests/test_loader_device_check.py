"""A CUDA ``device`` that torch cannot reach is refused naming the option (fresh-eyes round: torch's "Found no NVIDIA
driver" named none), and a string that is no torch device likewise. Oracle: torch's own ``cuda.is_available()``."""
from __future__ import annotations

import pytest
import torch

import loaders
from tests.conftest import SAMPLE_DATA

SHARDS = [str(p) for p in sorted((SAMPLE_DATA / "shards").glob("*.tar"))]


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is available here")
@pytest.mark.parametrize("device", ["cuda", "cuda:1", torch.device("cuda", 0)])
def test_a_cuda_device_torch_cannot_reach_is_named(device):
    with pytest.raises(ValueError, match=r"device=.*cuda.*torch sees no CUDA device.*device='cpu'"):
        loaders.make_dataset(SHARDS, seed=0, device=device)


def test_a_string_that_is_no_device_is_named():
    with pytest.raises(ValueError, match=r"device must be a torch device.*'tpu9'"):
        loaders.make_loader(SHARDS, seed=0, device="tpu9")
