#!/usr/bin/env python3
"""torchcodec audio in forked children (BENCHMARKS.md, "torchcodec audio in forked children (branch fork12)"): how
many children abort or hang per parent state, and what ``read_audio`` costs in a child and a parent, for two source
trees, interleaved.

    OMP_NUM_THREADS=1 python scripts/bench_fork_audio.py outcomes --trees /work/main . --children 20 AUDIO.m4a
    OMP_NUM_THREADS=1 python scripts/bench_fork_audio.py speed --trees /work/main . --rounds 6 LONG.m4a

``outcomes``: per parent state (below), a fresh interpreter with the tree on ``PYTHONPATH`` puts itself in that state,
then forks ``--children`` children one after the other, each reading AUDIO with ``read_audio(backend="torchcodec")``;
counts their ends (``exit 0``, ``signal 6``, ``hung`` after 10 s). ``speed``: per round and tree (order alternating),
a fresh interpreter forks a child that reads LONG 4 times (``read_audio(sample_rate=16000)``), then reads it 4 times
itself; medians of wall and CPU seconds (``time.process_time``: all threads) of the first read and of the 3 others.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

STATES = {
    "nothing": "",
    "set_num_threads(2)": "torch.set_num_threads(2)",
    "set_num_threads(1) + parallel op": "torch.set_num_threads(1); (torch.ones(1 << 20) * 2).sum()",
    "set_num_threads(2) + get_num_threads()": "torch.set_num_threads(2); torch.get_num_threads()",
    "set_num_threads(2) + parallel op": "torch.set_num_threads(2); (torch.ones(1 << 20) * 2).sum()",
    "set_num_threads(4) + parallel op": "torch.set_num_threads(4); (torch.ones(1 << 20) * 2).sum()",
    "set_num_threads(2) + matmul (MKL)": "torch.set_num_threads(2); torch.ones(300, 300) @ torch.ones(300, 300)",
    "own torch.jit.fork (inter-op pool started)": "on_the_pool(torch.zeros(1))",
    "read_audio torchcodec (inter-op pool started)": "loaders.read_audio(path, backend='torchcodec')",
}

_OUTCOMES = r"""
import json, os, sys, time
import torch
import loaders

path, children = sys.argv[1], int(sys.argv[2])


@torch.jit.script
def plus_one(x: torch.Tensor) -> torch.Tensor:
    return x + 1


@torch.jit.script
def on_the_pool(x: torch.Tensor) -> torch.Tensor:
    return torch.jit.wait(torch.jit.fork(plus_one, x))


STATE
ends = {}
for _ in range(children):
    pid = os.fork()
    if pid == 0:
        os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
        loaders.read_audio(path, backend="torchcodec")
        os._exit(0)
    for _ in range(100):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            end = f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit {os.WEXITSTATUS(status)}"
            break
        time.sleep(0.1)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        end = "hung"
    ends[end] = ends.get(end, 0) + 1
print(json.dumps(ends))
"""

_SPEED = r"""
import json, os, sys, time
import loaders

path = sys.argv[1]


def reads():
    out = []
    for _ in range(4):
        wall, cpu = time.perf_counter(), time.process_time()
        loaders.read_audio(path, sample_rate=16000)
        out.append((time.perf_counter() - wall, time.process_time() - cpu))
    return out


r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.write(w, json.dumps(reads()).encode())
    os._exit(0)
os.close(w)
child = json.loads(os.read(r, 1 << 16))
os.waitpid(pid, 0)
print(json.dumps({"child": child, "parent": reads()}))
"""


def _run(tree: str, code: str, *args: str) -> dict:
    """``code`` run as a file (TorchScript reads its functions' source) in a fresh interpreter with ``tree`` first."""
    env = dict(os.environ, PYTHONPATH=os.path.abspath(tree))
    with tempfile.TemporaryDirectory() as d:
        script = os.path.join(d, "parent.py")
        with open(script, "w") as handle:
            handle.write(code)
        out = subprocess.run([sys.executable, script, *args], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def outcomes(trees: list[str], path: str, children: int) -> None:
    print(f"| parent state | {' | '.join(trees)} |\n|---|{'---|' * len(trees)}")
    for name, state in STATES.items():
        code = _OUTCOMES.replace("STATE", state)
        cells = [", ".join(f"{k}: {v}" for k, v in sorted(_run(t, code, path, str(children)).items())) for t in trees]
        print(f"| {name} | {' | '.join(cells)} |", flush=True)


def speed(trees: list[str], path: str, rounds: int) -> None:
    cases = ("child, first read", "child, reads 2-4", "parent, first read", "parent, reads 2-4")
    times: dict[str, dict[str, list]] = {t: {c: [] for c in cases} for t in trees}
    load = os.getloadavg()[0]
    for i in range(rounds):
        for tree in trees if i % 2 == 0 else trees[::-1]:
            got = _run(tree, _SPEED, path)
            for who in ("child", "parent"):
                times[tree][f"{who}, first read"].append(got[who][0])
                times[tree][f"{who}, reads 2-4"].extend(got[who][1:])
    print(f"{rounds} rounds, 1-minute load {load:.1f} -> {os.getloadavg()[0]:.1f}; median wall / CPU s\n")
    print(f"| case | {' | '.join(trees)} | wall, CPU {trees[-1]} / {trees[0]} |\n|---|{'---:|' * (len(trees) + 1)}")
    for case in cases:
        medians = [[statistics.median(x[k] for x in times[t][case]) for k in (0, 1)] for t in trees]
        cells = [f"{m[0]:.3f} / {m[1]:.3f}" for m in medians]
        ratio = f"{medians[-1][0] / medians[0][0]:.3f}, {medians[-1][1] / medians[0][1]:.3f}"
        print(f"| {case} | {' | '.join(cells)} | {ratio} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["outcomes", "speed"])
    parser.add_argument("path")
    parser.add_argument("--trees", nargs="+", required=True)
    parser.add_argument("--children", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    if args.mode == "outcomes":
        outcomes(args.trees, args.path, args.children)
    else:
        speed(args.trees, args.path, args.rounds)


if __name__ == "__main__":
    main()
