"""What a trimmed tail batch (``tail="trim"``) costs a ``torch.compile``'d training step, against ``tail="pad"``.

Two compiled copies of one small step over a packed batch (frames -> MLP -> per-item sums, as a model over
``cu_seqlens`` would; CPU inductor, torch 1 thread, ``dynamic=None`` as ``torch.compile``'s default): ``pad`` only
ever sees full batches (240 frames); ``trim`` sees full batches and then one tail of 90 frames, as at the end of each
epoch. Reported: the compile time of the first call and of the tail (the recompile),
and then both copies' time per full batch, alternating call by call (``--calls`` each), median.

    PYTHONPATH=$PWD .venv/bin/python scripts/bench_tail_compile.py [--calls 400]
    PYTHONPATH=$PWD .venv/bin/python scripts/bench_tail_compile.py --dynamic false --tails 90,120,60

``--dynamic false`` compiles with ``dynamic=False``; ``--tails`` gives the tail sizes the ``trim`` copy sees in turn
(one per epoch, each followed by a full batch): each tail call's time shows whether it compiled again.
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


def compiled_step(net: torch.nn.Module, tag: str, dynamic=None):
    """``torch.compile`` of its own copy of the step (a code object of its own: dynamo caches per code object)."""
    scope = {"torch": torch, "net": net}
    exec(compile(_STEP, f"<step_{tag}>", "exec"), scope)
    return torch.compile(scope["step"], dynamic=dynamic)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--dynamic", choices=["none", "false"], default="none")
    parser.add_argument("--tails", default="90", help="tail sizes (frames) seen in turn, comma-separated")
    args = parser.parse_args()
    dynamic = None if args.dynamic == "none" else False
    torch.set_num_threads(1)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3 * 16 * 16, 512), torch.nn.GELU(), torch.nn.Linear(512, 512),
                              torch.nn.GELU(), torch.nn.Linear(512, 64))
    full = (torch.randn(240, 3, 16, 16), torch.tensor([120, 120]))
    tails = [int(n) for n in args.tails.split(",")]
    pad, trim = compiled_step(net, "pad", dynamic), compiled_step(net, "trim", dynamic)

    def timed(fn, batch) -> float:
        started = time.perf_counter()
        fn(*batch)
        return time.perf_counter() - started

    compile_pad, compile_trim = timed(pad, full), timed(trim, full)
    tail_seconds = []
    for n in tails:  # one tail per epoch, then the next epoch's full batches
        tail_seconds.append(timed(trim, (torch.randn(n, 3, 16, 16), torch.tensor([n - n // 3, n // 3]))))
        timed(trim, full)
    times: dict[str, list[float]] = {"pad": [], "trim": []}
    for _ in range(args.calls):
        times["pad"].append(timed(pad, full))
        times["trim"].append(timed(trim, full))
    median = {k: sorted(v)[len(v) // 2] * 1e3 for k, v in times.items()}
    print(f"dynamic={dynamic}; first compile s: pad {compile_pad:.1f}, trim {compile_trim:.1f}; trim's tails "
          + ", ".join(f"{n} frames {t:.2f} s" for n, t in zip(tails, tail_seconds)))
    print(f"full batch after, median of {args.calls} alternating calls: pad {median['pad']:.3f} ms, "
          f"trim {median['trim']:.3f} ms (trim / pad {median['trim'] / median['pad']:.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
