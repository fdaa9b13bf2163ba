"""Padding of ``make_loader`` and ``DataLoader(make_dataset(...))`` (2 workers) under each tail policy, one epoch.

Same options as ``scripts/bench_loader.py`` (16 kHz mono, 112x112, ``buffer_size=8``, budgets from FPS and
WINDOW_SECONDS). Padding is of the delivered tensors (a trimmed tail counts at its own size); items dropped are the
``tail_dropped`` skips (make_loader's ``stats``; a DataLoader's live in its workers). Deterministic: one run.

Usage::

    PYTHONPATH=$PWD .venv/bin/python scripts/bench_tail_padding.py 'SHARDS_GLOB' FPS|none WINDOW_SECONDS
"""
import glob, sys
import torch
torch.set_num_threads(1)
import loaders
paths = sorted(glob.glob(sys.argv[1]))
fps = None if sys.argv[2] == "none" else float(sys.argv[2])
window = float(sys.argv[3])
budgets = (int(round((fps or 30) * window * 2)), int(16000 * window * 2), 512)
options = dict(seed=0, fps=fps, sample_rate=16000, budgets=budgets, window_seconds=window, buffer_size=8,
               frame_size=(112, 112), max_items=64)
print("| loader | tail | batches | items | items dropped | frame padding | audio padding | token padding |")
print("|---|---|---|---|---|---|---|---|")
for tail in ("pad", "trim", "drop"):
    for kind in ("make_loader", "DataLoader"):
        if kind == "make_loader":
            source = loaders.make_loader(paths, num_workers=2, tail=tail, **options)
        else:
            source = torch.utils.data.DataLoader(loaders.make_dataset(paths, tail=tail, **options), batch_size=None, num_workers=2)
        used = [0, 0, 0]; cap = [0, 0, 0]; batches = items = 0
        for b in source:
            n = b.num_items
            for j, (cu, t) in enumerate(((b.cu_seqlens_frames, b.frames), (b.cu_seqlens_samples, b.audio), (b.cu_seqlens_tokens, b.token_spans))):
                used[j] += int(cu[n]); cap[j] += int(t.shape[0])
            batches += 1; items += n
        dropped = source.stats.skipped.get("tail_dropped", 0) if kind == "make_loader" else "-"
        pads = " | ".join(f"{1 - u / c:.1%}" for u, c in zip(used, cap))
        print(f"| {kind} | {tail} | {batches} | {items} | {dropped} | {pads} |", flush=True)
