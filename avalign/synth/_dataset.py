"""A whole synthetic dataset: clips, ``truth.json`` and WebDataset shards."""
from __future__ import annotations

import io
import json
import logging
import tarfile
from pathlib import Path
from typing import Sequence

from ._clip import make_clip
from ._spec import ClipSpec

logger = logging.getLogger(__name__)

__all__ = ["write_dataset", "write_shards"]


def write_shards(out_dir: Path, records: dict[str, dict], *, clips_per_shard: int = 3) -> list[Path]:
    """Pack each clip's media and transcript as ``shards/shard-%06d.tar`` (sorted, mtime 0, uid/gid 0)."""
    if clips_per_shard < 1:
        raise ValueError(f"clips_per_shard must be >= 1, got {clips_per_shard = }")
    shard_dir = Path(out_dir) / "shards"
    shard_dir.mkdir(parents=True, exist_ok=True)
    for old in shard_dir.glob("shard-*.tar"):
        old.unlink()
    keys = sorted(records)
    paths = []
    for shard_index, first in enumerate(range(0, len(keys), clips_per_shard)):
        path = shard_dir / f"shard-{shard_index:06d}.tar"
        members = sorted(name for key in keys[first:first + clips_per_shard]
                         for name in (records[key]["media"], records[key]["transcript"]))
        with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
            for name in members:
                data = (Path(out_dir) / name).read_bytes()
                info = tarfile.TarInfo(name)
                info.size, info.mtime, info.mode = len(data), 0, 0o644
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                tar.addfile(info, io.BytesIO(data))
        paths.append(path)
        logger.info("wrote %s (%d members)", path, len(members))
    return paths


def write_dataset(specs: Sequence[ClipSpec], out_dir: Path, *, generator: dict,
                  clips_per_shard: int = 3) -> dict:
    """Make every clip, then ``truth.json`` and the shards; returns the truth document."""
    out_dir = Path(out_dir)
    keys = [spec.key for spec in specs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"clip keys must be unique, got {keys}")
    records = {}
    for number, spec in enumerate(specs, start=1):
        records[spec.key] = make_clip(spec, out_dir)
        r = records[spec.key]
        logger.info("[%d/%d] %s: %s %s+%s, %d flashes, %d words, av %+g ms, drift %+g ppm, text %+g ms",
                    number, len(specs), spec.key, r["media"], r["video_codec"], r["audio_codec"],
                    len(r["flash_pts_seconds"]), len(r["words"]), spec.av_offset_ms, spec.drift_ppm,
                    spec.text_offset_ms)
    truth = {"generator": generator, "clips": records}
    (out_dir / "truth.json").write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n")
    write_shards(out_dir, records, clips_per_shard=clips_per_shard)
    return truth
