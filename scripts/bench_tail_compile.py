"""What a trimmed tail batch (``tail="trim"``) costs a ``torch.compile``'d training step, against ``tail="pad"``.

Two compiled copies of one small step over a packed batch (frames -> MLP -> per-item sums, as a model over
``cu_seqlens`` would; CPU inductor, torch 1 thread, ``dynamic=None`` as ``torch.compile``'s default): ``pad`` only
ever sees full batches (240 frames); ``trim`` sees full batches and then one tail of 90 frames, as at the end of each
epoch. Reported: the compile time of the first call and of the tail (the recompile),
and then both copies' time per full batch, alternating call by call (``--calls`` each), median.

    PYTHONPATH=$PWD .venv/bin/python scripts/bench_tail_compile.py [--calls 400]
"""
from __future__ import annotations

import argparse
import time

import torch

_STEP = """
def step(frames, lengths):
    h = net(frames.flatten(1))
    owner = torch.repeat_interleave(torch.arange(lengths.numel()), lengths, output_size=frames.shape[0])
    pooled = torch.zeros(lengths.numel(), h.shape[1]).index_add_(0, owner, h)
    return pooled.square().mean()
"""


def compiled_step(net: torch.nn.Module, tag: str):
    """``torch.compile`` of its own copy of the step (a code object of its own: dynamo caches per code object)."""
    scope = {"torch": torch, "net": net}
    exec(compile(_STEP, f"<step_{tag}>", "exec"), scope)
    return torch.compile(scope["step"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=400)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3 * 16 * 16, 512), torch.nn.GELU(), torch.nn.Linear(512, 512),
                              torch.nn.GELU(), torch.nn.Linear(512, 64))
    full = (torch.randn(240, 3, 16, 16), torch.tensor([120, 120]))
    tail = (torch.randn(90, 3, 16, 16), torch.tensor([60, 30]))
    pad, trim = compiled_step(net, "pad"), compiled_step(net, "trim")

    def timed(fn, batch) -> float:
        started = time.perf_counter()
        fn(*batch)
        return time.perf_counter() - started

    compile_pad, compile_trim, recompile = timed(pad, full), timed(trim, full), timed(trim, tail)
    times: dict[str, list[float]] = {"pad": [], "trim": []}
    for _ in range(args.calls):
        times["pad"].append(timed(pad, full))
        times["trim"].append(timed(trim, full))
    median = {k: sorted(v)[len(v) // 2] * 1e3 for k, v in times.items()}
    print(f"first compile s: pad {compile_pad:.1f}, trim {compile_trim:.1f}; trim's tail (recompile) {recompile:.1f} s")
    print(f"full batch after, median of {args.calls} alternating calls: pad {median['pad']:.3f} ms, "
          f"trim {median['trim']:.3f} ms (trim / pad {median['trim'] / median['pad']:.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
