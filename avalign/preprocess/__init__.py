"""``avalign preprocess``: raw media or shards → aligned WebDataset shards (local processes or Ray). Re-exports only."""
from avalign.preprocess._inputs import InputPlan, InputSample, is_transcript_json, list_inputs
from avalign.preprocess._run import PreprocessResult, plan_shards, preprocess
from avalign.preprocess._sample import SampleOptions

__all__ = sorted(
    [
        "InputPlan",
        "InputSample",
        "PreprocessResult",
        "SampleOptions",
        "is_transcript_json",
        "list_inputs",
        "plan_shards",
        "preprocess",
    ]
)
