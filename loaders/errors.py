"""Errors raised by the loaders (a public module): re-exported from :mod:`avcore`, where they live.

See ``avcore._errors`` for the reason codes (:data:`REASONS`) shared by the loader, ``avalign preprocess``
and ``avalign report``.
"""
from avcore._errors import REASONS, DecodeError, DecodeTimeout, SampleError, TranscriptError, reason_of, sample_error

__all__ = ["DecodeError", "DecodeTimeout", "REASONS", "SampleError", "TranscriptError", "reason_of", "sample_error"]
