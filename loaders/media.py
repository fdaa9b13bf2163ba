"""Opening and indexing media (a public module): what tools and tests need beside ``read_video`` / ``read_audio``.

- sources: :data:`MediaSource` (a path or bytes), :func:`describe_source`, :func:`open_for_pyav`, :func:`pick_stream`;
- limits: :data:`DEFAULT_MAX_PIXELS`; the backend ``read_video(backend="auto")`` uses per kind of read: :data:`AUTO_BACKEND`;
- frame timing: :func:`strictly_increasing` (the decoder's rule for repeated / missing pts), :class:`FrameIndex`
  and the header / scan indexes (:func:`frame_index`, :func:`header_frame_index`, :func:`scan_frame_index`,
  :func:`read_mp4_video_tracks`) with their per-process cache (:func:`clear_frame_index_cache`);
- MP4 boxes: :func:`mp4_boxes` walks them (:class:`Mp4Box`), for the header index and preprocess's edit-list rewrite;
  :func:`mp4_sample_data_end` and :func:`check_not_truncated` (``read_video`` / ``read_audio`` refuse an MP4 cut short);
- audio blocks: :class:`SampleBuffer` (how decoded audio frames are joined); audio time:
  :func:`audio_timeline_shift_seconds` (how far FFmpeg's timestamps run ahead of the content: a raw MP3's encoder delay);
- large results: :class:`PagePopulator` (a result tensor's memory populated in bulk ahead of its writer),
  :func:`advise_huge_pages` / :func:`huge_pages_on_request` (fresh buffers asking for 2 MiB pages),
  :class:`ResultPool` and the process's :data:`result_pool` (freed large results' memory reused by the next
  decode; ``result_pool.release()`` frees it, ``result_pool.set_limits(max_bytes=0)`` turns it off);
- the decode watchdog: :func:`call_with_timeout`, :func:`exit_with_parent`, :func:`heap_frozen_for_fork`.

Implementation: ``loaders._source``, ``_video``, ``_audio``, ``_index``, ``_mp4_index``, ``_truncated``, ``_pages``, ``_result_pool``, ``_watchdog``.
"""
from loaders._audio import _SampleBuffer as SampleBuffer
from loaders._audio import audio_timeline_shift_seconds
from loaders._index import (
    FrameIndex,
    clear_frame_index_cache,
    frame_index,
    frame_index_cache_size,
    header_frame_index,
    scan_frame_index,
)
from loaders._mp4_index import Mp4Box, Mp4Track, mp4_boxes, read_mp4_video_tracks
from loaders._pages import PagePopulator, advise_huge_pages, huge_pages_on_request
from loaders._result_pool import ResultPool, result_pool
from loaders._source import MediaSource, describe_source, open_for_pyav, pick_stream
from loaders._truncated import check_not_truncated, mp4_sample_data_end
from loaders._video import AUTO_BACKEND, DEFAULT_MAX_PIXELS, strictly_increasing
from loaders._watchdog import call_with_timeout, exit_with_parent, heap_frozen_for_fork

__all__ = [
    "AUTO_BACKEND",
    "DEFAULT_MAX_PIXELS",
    "FrameIndex",
    "MediaSource",
    "Mp4Box",
    "Mp4Track",
    "PagePopulator",
    "ResultPool",
    "SampleBuffer",
    "advise_huge_pages",
    "audio_timeline_shift_seconds",
    "call_with_timeout",
    "check_not_truncated",
    "clear_frame_index_cache",
    "describe_source",
    "exit_with_parent",
    "heap_frozen_for_fork",
    "huge_pages_on_request",
    "frame_index",
    "frame_index_cache_size",
    "header_frame_index",
    "mp4_boxes",
    "mp4_sample_data_end",
    "open_for_pyav",
    "pick_stream",
    "read_mp4_video_tracks",
    "result_pool",
    "scan_frame_index",
    "strictly_increasing",
]
