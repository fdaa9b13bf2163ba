"""Errors raised by the loaders (a public module): re-exported from :mod:`avcore`, where they live.

See :mod:`avcore` for the reason codes (:data:`REASONS`) shared by the loader, ``avalign preprocess``
and ``avalign report``; :data:`WARNINGS_PER_REASON` for how many skips of each are logged as warnings per epoch
(:class:`SkipLog`, which ``avalign preprocess`` uses too).
"""
from avcore import REASONS, DecodeError, DecodeTimeout, SampleError, ShardError, TranscriptError, reason_of, sample_error
from loaders._skip_log import WARNINGS_PER_REASON, SkipLog

__all__ = ["DecodeError", "DecodeTimeout", "REASONS", "SampleError", "ShardError", "SkipLog", "TranscriptError",
           "WARNINGS_PER_REASON", "reason_of", "sample_error"]
