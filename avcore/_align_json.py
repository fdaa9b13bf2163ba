"""``align.json``: the per-sample record ``avalign preprocess`` writes, and the loader and ``avalign report`` read.

One schema, one reader, one writer. The record is ``avalign measure``'s JSON object (DESIGN.md's contract) plus
preprocess's ``config``; what readers rely on, and what is checked on both sides:

- a JSON object (UTF-8) with the key ``av_offset_ms``;
- the clock values ``av_offset_ms``, ``drift_ppm``, ``text_offset_ms``: each null (abstained / unknown) or a finite
  number (JSON has no NaN: a non-finite value is refused on writing and on reading);
- no ``NaN`` / ``Infinity`` token anywhere (not JSON; Python's ``json`` would read them), and the blocks
  ``video``, ``audio``, ``aligned`` and ``reencode`` each absent, null or an object.

Optional blocks a reader may use (absent in records written before them):

- ``reencode`` (``avalign preprocess --reencode mp4`` only): ``{"audio": "copy" | "aac" | null,
  "video_start_delta_ms": float | null, "audio_start_delta_ms": float | null}``: how the audio was written, and
  the first video frame's / first audio sample's presentation time in the written media minus the source's
  (measured by decoding both; null where the stream is absent). The written media is on the source's clock,
  which the transcript members are stamped on: a delta is 0, or under half a tick where the MP4 timescale
  rounds a start, or positive where media before time 0 was not kept (MP4 cannot present it; the kept frames
  and samples keep their times). A reader needs to shift nothing; a delta over half a tick was logged.

A record that breaks this is a counted skip with reason ``align_json`` (``SampleError``), never a crash later on.
"""
from __future__ import annotations

import json
import math
from typing import Any, Optional, Union

from avcore._errors import SampleError

__all__ = ["ALIGN_JSON", "CLOCK_FIELDS", "canonical_json", "clock_values", "dump_align_json", "read_align_json",
           "validate_align_record"]

ALIGN_JSON = "align.json"
"""The member extension (``<key>.align.json``) and file suffix of the record."""
CLOCK_FIELDS = ("av_offset_ms", "drift_ppm", "text_offset_ms")
"""The clock values a record carries (null or a finite number each); ``aligner.align`` takes them as given."""
_OBJECT_FIELDS = ("video", "audio", "aligned", "reencode")
"""The blocks readers look into (``avalign report``): each absent, null or a JSON object."""


def validate_align_record(record: Any, *, key: str = "", shard: str = "") -> dict:
    """``record`` itself when it holds to the schema (see the module docstring), else :class:`SampleError`
    (reason ``align_json``) naming the key, the shard and what is wrong."""
    if not isinstance(record, dict):
        raise SampleError(f"align.json is not a JSON object (got {type(record).__name__})", shard=shard, key=key,
                          reason="align_json")
    if "av_offset_ms" not in record:
        raise SampleError("align.json has no 'av_offset_ms' (not the measure schema)", shard=shard, key=key,
                          reason="align_json")
    for name in CLOCK_FIELDS:
        value = record.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)):
            raise SampleError(f"align.json field {name!r} must be null or a finite number, got {value!r}", shard=shard,
                              key=key, reason="align_json")
    for name in _OBJECT_FIELDS:
        value = record.get(name)
        if value is not None and not isinstance(value, dict):
            raise SampleError(f"align.json field {name!r} must be null or an object, got {value!r:.80}", shard=shard,
                              key=key, reason="align_json")
    return record


def _refuse_constant(token: str) -> None:
    raise ValueError(f"{token} is not a JSON number (a value must be finite or null)")


def read_align_json(data: Union[bytes, str], *, key: str = "", shard: str = "") -> dict:
    """The record in ``data`` (the member's bytes), validated.

    Raises:
        SampleError: reason ``align_json``: not UTF-8 JSON, or not the schema.

    Example:
        >>> read_align_json(b'{"av_offset_ms": 12.5, "drift_ppm": null}')["av_offset_ms"]
        12.5
    """
    try:
        record = json.loads(data, parse_constant=_refuse_constant)
    except ValueError as error:  # JSONDecodeError and UnicodeDecodeError
        raise SampleError(f"align.json is not valid JSON: {error}", shard=shard, key=key, reason="align_json") from None
    return validate_align_record(record, key=key, shard=shard)


def clock_values(record: dict) -> dict[str, Optional[float]]:
    """``{av_offset_ms, drift_ppm, text_offset_ms}`` of a validated record (None where null or absent)."""
    return {name: (None if record.get(name) is None else float(record[name])) for name in CLOCK_FIELDS}


def canonical_json(value: Any) -> bytes:
    """Canonical JSON bytes: sorted keys, no spaces, UTF-8, NaN refused.

    Any string can be written: a name that is not valid Unicode (a tar member name with undecodable bytes,
    held as lone surrogates such as ``\\udcff``) is written as the JSON escape ``\\udcff``, which reads back
    as the same string (``json.loads``); valid text is written as UTF-8, unchanged.
    """
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return text.encode("utf-8", "backslashreplace")


def dump_align_json(record: dict, *, key: str = "") -> bytes:
    """The bytes of ``<key>.align.json``: ``record`` validated (:func:`validate_align_record`), canonical JSON."""
    return canonical_json(validate_align_record(record, key=key))
