"""Seeded fuzz of the whole pipeline (issue #13): mutated generated media, transcripts and tars through the
public ``loaders.make_loader`` and ``avalign.preprocess.preprocess`` APIs, bounded to well under a minute.

Invariants, for both tools:
    no crash      the loader runs in a forked child (the decode watchdog): a segfault there is a test failure,
                  not a dead runner
    no hang       the child has a time limit; preprocess runs each sample under its watchdog
    no silent loss every key of every shard is delivered or skipped with a reason from ``REASONS``
                  (never ``error``, the vocabulary's "a bug"); a cut tar names its damaged sample
    no collateral every good sample (interleaved with the bad ones) is delivered

The seed is fixed (``SEED``): a failure reproduces; change it to explore.
"""
from __future__ import annotations

import io
import json
import random
import tarfile
from pathlib import Path

import pytest

from loaders.errors import REASONS
from tests import hostile_inputs as hostile
from tests.corrupt_cases import good_transcript

SEED = 13
MEDIA_MUTANTS = 14
TEXT_MUTANTS = 12


def _load_all(shards: list[str]) -> dict:
    """Every key the loader delivers over ``shards`` and its named skips (run in a forked child)."""
    import loaders

    loader = loaders.make_loader(shards, seed=0, budgets=(64, 64_000, 64), buffer_size=4, frame_size=(24, 32),
                                 max_items=8, max_words=64, max_segments=16, on_error="skip")
    keys = [k for batch in loader for k in batch.sample_keys]
    return {"keys": keys, "skipped": [list(s) for s in loader.stats.skipped_samples]}

_SRT = b"1\n00:00:00,100 --> 00:00:00,400\none two\n\n2\n00:00:00,500 --> 00:00:00,900\nthree four\n"
_VTT = b"WEBVTT\n\n00:00.100 --> 00:00.400\none <00:00.250>two\n\n00:00.500 --> 00:00.900\nthree\n"


def _mutate_media(rng: random.Random, data: bytes) -> bytes:
    kind = rng.choice(["flip", "flip", "cut", "zero", "dup", "timescale", "stts"])
    out = bytearray(data)
    if kind == "flip":
        for _ in range(rng.randint(1, 12)):
            out[rng.randrange(len(out))] = rng.randrange(256)
    elif kind == "cut":
        out = out[: rng.randrange(16, len(out))]
    elif kind == "zero":
        at, n = rng.randrange(len(out)), rng.randint(16, 512)
        out[at:at + n] = bytes(len(out[at:at + n]))
    elif kind == "dup":
        at = rng.randrange(len(out) - 64)
        out[at:at] = out[at:at + rng.randint(8, 64)]
    elif kind == "timescale" and b"mdhd" in data:
        out = bytearray(hostile.set_mdhd_timescale(data, rng.randrange(2), rng.choice([0, 1, 7])))
    elif kind == "stts" and b"stts" in data:
        out = bytearray(hostile.set_stts_deltas(data, rng.choice([0, 1])))
    return bytes(out)


def _mutate_text(rng: random.Random) -> tuple[str, bytes]:
    ext, data = rng.choice([("srt", _SRT), ("vtt", _VTT), ("json", good_transcript())])
    out = bytearray(data)
    kind = rng.choice(["flip", "drop_line", "hours", "many", "cut"])
    if kind == "flip":
        for _ in range(rng.randint(1, 4)):
            out[rng.randrange(len(out))] = rng.randrange(32, 127)
    elif kind == "drop_line":
        lines = bytes(out).split(b"\n")
        del lines[rng.randrange(len(lines))]
        out = bytearray(b"\n".join(lines))
    elif kind == "hours":
        out = bytearray(bytes(out).replace(b"00:00", b"99:99", 1))
    elif kind == "many" and ext == "srt":
        out = bytearray(hostile.srt(100_001, words_per_cue=1))
    else:
        out = out[: rng.randrange(1, len(out))]
    return ext, bytes(out)


def build(tmp_path: Path, *, seed: int = SEED, media_mutants: int = MEDIA_MUTANTS,
          text_mutants: int = TEXT_MUTANTS) -> tuple[list[str], dict[str, set], set, dict[str, str]]:
    """Shards, their keys, the good keys, and for the cut shard the key whose sample is cut (truncated).
    (Also used by ``scripts/adversarial_matrix.py`` with more mutants and seeds.)"""
    rng = random.Random(seed)
    base = {
        "mp4": hostile.clip(tmp_path / "base.mp4"),
        "mkv": hostile.clip(tmp_path / "base.mkv", container_args=("-c:a", "libopus", "-ar", "48000")),
    }
    good = lambda k, ext="mp4": [(f"{k}.json", good_transcript()), (f"{k}.{ext}", base[ext])]  # noqa: E731
    media_members, text_members = [], []
    for i in range(media_mutants):
        ext = rng.choice(sorted(base))
        media_members += good(f"g{i:02d}", ext) if i % 4 == 0 else []
        media_members += [(f"m{i:02d}.json", good_transcript()), (f"m{i:02d}.{ext}", _mutate_media(rng, base[ext]))]
    for i in range(text_mutants):
        ext, data = _mutate_text(rng)
        text_members += good(f"h{i:02d}") if i % 4 == 0 else []
        text_members += [(f"t{i:02d}.{ext}", data), (f"t{i:02d}.mp4", base["mp4"])]
    cut_members = [m for k in ("c0", "c1", "c2", "c3") for m in good(k)]
    whole = hostile.tar_bytes(cut_members)
    archive = tarfile.open(fileobj=io.BytesIO(whole))
    victim = rng.choice(archive.getmembers()[2:])  # in a later sample, header or data
    cut = rng.randrange(victim.offset + 120, victim.offset_data + max(victim.size, 1))
    shards = {}
    for name, members, data in (("media", media_members, None), ("text", text_members, None), ("cut", None, whole[:cut])):
        path = tmp_path / f"{name}.tar"
        path.write_bytes(data if data is not None else hostile.tar_bytes(members))
        shards[str(path)] = {n.split(".", 1)[0] for n, _ in (members or cut_members)}
    cut_key = victim.name.split(".", 1)[0]
    good_keys = {k for keys in shards.values() for k in keys if k[0] in "gh"}
    good_keys |= {f"c{i}" for i in range(int(cut_key[1]))}
    return list(shards), shards, good_keys, {str(tmp_path / "cut.tar"): cut_key}


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_fuzzed_media_transcripts_and_tars_lose_nothing_silently(tmp_path):
    shards, keys_by_shard, good_keys, cut = build(tmp_path)
    cut_shard, cut_key = next(iter(cut.items()))
    lost_to_cut = {k for k in keys_by_shard[cut_shard] if k > cut_key}  # never reached: no record can exist

    # --- loader (a forked child under the decode watchdog: a native crash or a hang fails the test instead of
    # killing or blocking the runner; an exception is re-raised here with its type)
    from loaders.errors import DecodeError, DecodeTimeout
    from loaders.media import call_with_timeout, heap_frozen_for_fork

    try:
        with heap_frozen_for_fork():
            result = call_with_timeout(_load_all, shards, timeout_seconds=240, label="fuzzed loader")
    except (DecodeError, DecodeTimeout) as e:
        pytest.fail(f"loader crashed or hung: {e}")
    delivered = set(result["keys"])
    skipped = {(shard, key): reason for shard, key, reason in result["skipped"]}
    assert good_keys <= delivered, sorted(good_keys - delivered)
    assert all(reason in REASONS and reason != "error" for reason in skipped.values()), skipped
    for shard, keys in keys_by_shard.items():
        expected = keys - (lost_to_cut if shard == cut_shard else set())
        named = {key for s, key in skipped if s == shard}
        assert expected == (delivered & keys) | named, (shard, sorted(expected - delivered - named))
    assert skipped.get((cut_shard, cut_key)) == "truncated"

    # --- preprocess (each sample under its watchdog)
    from avalign.preprocess import preprocess

    out = tmp_path / "out"
    preprocess("::".join(shards), str(out), progress=False, timeout_seconds=60, samples_per_shard=50)
    manifest = {json.loads(line)["key"] for line in (out / "manifest.jsonl").read_text().splitlines()}
    rows = [json.loads(line) for line in (out / "skipped.jsonl").read_bytes().splitlines()]
    assert good_keys <= manifest, sorted(good_keys - manifest)
    assert all(r["reason"] in REASONS and r["reason"] != "error" for r in rows), rows
    everything = set().union(*keys_by_shard.values()) - lost_to_cut
    assert everything == manifest | {r["key"] for r in rows}, sorted(everything - manifest - {r["key"] for r in rows})
    assert {"key": cut_key, "reason": "truncated"}.items() <= next(r for r in rows if r["key"] == cut_key).items()
    # the two tools agree on which samples are lost (preprocess keeps audio-only media the loader skips)
    loader_lost = {key for _, key in skipped}
    assert {r["key"] for r in rows} <= loader_lost
