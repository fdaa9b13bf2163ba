"""Read back every sample of a 400-sample shard as preprocess does (list_inputs, then read_members in key order):
plain tar, local .tar.gz, pipe: .tar.gz; three runs each, median. BENCHMARKS.md, "preprocess on streamed shards".

Usage: PYTHONPATH=. python scripts/bench_streamed_shard_reads.py  (writes /tmp/avalign-bench-streamed: 78 MB)
"""
import gzip, io, os, statistics, sys, tarfile, time
from avalign.preprocess import list_inputs, read_members
d = "/tmp/avalign-bench-streamed"; os.makedirs(d, exist_ok=True)
rng = __import__("random").Random(0)
if not os.path.exists(f"{d}/data.tar"):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for i in range(400):
            for ext, n in (("mp4", 97_000), ("txt", 20)):
                data = rng.randbytes(n); info = tarfile.TarInfo(f"{i:06d}.{ext}"); info.size = n
                t.addfile(info, io.BytesIO(data))
    open(f"{d}/data.tar", "wb").write(buf.getvalue())
    open(f"{d}/data.tar.gz", "wb").write(gzip.compress(buf.getvalue(), compresslevel=1))
for url in (f"{d}/data.tar", f"{d}/data.tar.gz", f"pipe:cat {d}/data.tar.gz"):
    plan = list_inputs(url)
    times = []
    for rep in range(3):
        t0 = time.perf_counter()
        for s in plan.samples:
            read_members([s.media] + [loc for _, loc in s.extras])
        times.append(time.perf_counter() - t0)
    label = ("pipe:cat " if url.startswith("pipe:") else "") + url.split("/")[-1]
    print(f"{label:>20}: {len(plan.samples)} samples, {os.path.getsize(f'{d}/data.tar.gz')/1e6:.1f} MB gz, median {statistics.median(times):.2f} s of {[round(t,2) for t in times]}")
