"""Errors raised by the loaders (a public module): re-exported from :mod:`avcore`, where they live.

See :mod:`avcore` for the reason codes (:data:`REASONS`) shared by the loader, ``avalign preprocess``
and ``avalign report``.
"""
from avcore import REASONS, DecodeError, DecodeTimeout, SampleError, ShardError, TranscriptError, reason_of, sample_error

__all__ = ["DecodeError", "DecodeTimeout", "REASONS", "SampleError", "ShardError", "TranscriptError", "reason_of", "sample_error"]
