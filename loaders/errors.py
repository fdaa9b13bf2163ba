"""Errors raised by the loaders (a public module): re-exported from :mod:`avcore`, where they live.

See :mod:`avcore` for the reason codes (:data:`REASONS`) shared by the loader, ``avalign preprocess``
and ``avalign report``; :data:`WARNINGS_PER_REASON` for how many skips of each are logged as warnings per epoch.
"""
from avcore import REASONS, DecodeError, DecodeTimeout, SampleError, ShardError, TranscriptError, reason_of, sample_error
from loaders._skip_log import WARNINGS_PER_REASON

__all__ = ["DecodeError", "DecodeTimeout", "REASONS", "SampleError", "ShardError", "TranscriptError", "WARNINGS_PER_REASON",
           "reason_of", "sample_error"]
