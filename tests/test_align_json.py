"""``align.json`` has one schema: what preprocess writes reads back, and the loader and the report refuse the same
bad records with the same reason (``align_json``)."""
from __future__ import annotations

import collections
import io
import json
import tarfile

import pytest

from avalign.report import iter_inputs
from avcore import SampleError, clock_values, dump_align_json, read_align_json
from loaders import decode_items

BAD_RECORDS = {
    "not JSON": b"{not json",
    "not UTF-8": b'{"av_offset_ms": "\xff"}',
    "a list": b"[1, 2]",
    "no av_offset_ms": b'{"drift_ppm": 0.0}',
    "a string value": b'{"av_offset_ms": "12"}',
    "a bool value": b'{"av_offset_ms": true}',
    "NaN": b'{"av_offset_ms": NaN}',
    "Infinity in drift": b'{"av_offset_ms": 1.0, "drift_ppm": Infinity}',
}


@pytest.mark.parametrize("name", sorted(BAD_RECORDS))
def test_bad_records_are_refused_by_reader_loader_and_report(name, tmp_path):
    data = BAD_RECORDS[name]
    with pytest.raises(SampleError) as info:
        read_align_json(data, key="k", shard="s.tar")
    assert info.value.reason == "align_json" and info.value.key == "k"
    skipped = collections.Counter()
    sample = {"__key__": "k", "__url__": "s.tar", "mp4": b"not decoded: align.json is read first", "align.json": data}
    assert list(decode_items([sample], skipped=skipped)) == [] and skipped == {"align_json": 1}
    shard = tmp_path / "shard-000000.tar"
    with tarfile.open(shard, "w") as tar:
        info_ = tarfile.TarInfo("k.align.json")
        info_.size = len(data)
        tar.addfile(info_, io.BytesIO(data))
    [item] = list(iter_inputs(str(shard)))
    assert item.reason == "align_json" and item.key == "k"


def test_written_records_read_back_with_their_clock_values():
    record = {"av_offset_ms": -84.995, "drift_ppm": None, "text_offset_ms": 12, "video": {"num_frames": 3}, "key": "k"}
    data = dump_align_json(record, key="k")
    assert json.loads(data) == record and data == json.dumps(record, sort_keys=True, separators=(",", ":")).encode()
    assert clock_values(read_align_json(data)) == {"av_offset_ms": -84.995, "drift_ppm": None, "text_offset_ms": 12.0}
    with pytest.raises(SampleError, match="'drift_ppm' must be null or a finite number"):
        dump_align_json(dict(record, drift_ppm=float("nan")))
    with pytest.raises(SampleError, match="no 'av_offset_ms'"):
        dump_align_json({"drift_ppm": 0.0})
