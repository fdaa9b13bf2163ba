"""``avalign bench``: side-by-side measurements, medians of repeated runs, ratios from one run."""
from avalign.bench._align import bench_align, format_align_table
from avalign.bench._decode import bench_decode, bench_long, format_decode_table, format_long_table

__all__ = ["bench_align", "bench_decode", "bench_long", "format_align_table", "format_decode_table", "format_long_table"]
