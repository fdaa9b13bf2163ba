"""The aligner's public surface is DESIGN's contract; everything else is reached through public submodules."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

import aligner
import aligner.estimators
import aligner.spans
import aligner.timeline

REPO = Path(__file__).resolve().parents[1]

CONTRACT = {
    "align", "AlignedSample", "AlignedSpan", "AlignmentReport", "AVEstimate", "AVAbstain", "TextEstimate",
    "ClockModel", "estimate_av_offset", "estimate_transcript_offset", "AVOptions", "TextOptions",
}


def test_top_level_exports_are_the_contract() -> None:
    assert set(aligner.__all__) == CONTRACT
    assert aligner.__all__ == sorted(aligner.__all__)
    # Time rules belong to the base package, estimator variants to aligner.estimators.
    for name in ("frame_range", "sample_range", "seconds_to_samples", "estimate_text_offset", "forced_align_words"):
        assert not hasattr(aligner, name), name


@pytest.mark.parametrize("module", [aligner.estimators, aligner.spans, aligner.timeline])
def test_public_submodules_export_what_they_list(module) -> None:
    assert module.__all__ == sorted(module.__all__)
    for name in module.__all__:
        assert getattr(module, name) is not None, name


def test_no_private_aligner_imports_outside_aligner() -> None:
    """Tools, scripts, tests and the other packages use ``aligner.X`` or a public submodule, never ``aligner._…``."""
    private = re.compile(r"^\s*(from\s+aligner\._\w+\s+import|import\s+aligner\._|from\s+aligner\s+import\s+_)", re.M)
    offenders = []
    for path in sorted(REPO.rglob("*.py")):
        relative = path.relative_to(REPO)
        if relative.parts[0] in ("aligner", ".venv", "build") or "site-packages" in relative.parts:
            continue
        offenders += [f"{relative}: {m.group(0).strip()}" for m in private.finditer(path.read_text(errors="replace"))]
    assert offenders == []


def test_options_are_frozen_and_validated_once() -> None:
    options = aligner.AVOptions()
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.max_offset_ms = 1.0  # type: ignore[misc]
    assert dataclasses.replace(options, max_drift_ppm=0.0).max_drift_ppm == 0.0
    with pytest.raises(ValueError, match="max_drift_ppm"):
        dataclasses.replace(options, max_drift_ppm=-5.0)
    assert aligner.estimators.TEXT_METHODS == ("auto", "energy", "forced")
    assert aligner.estimators.VISUAL_FEATURES == ("background_rise", "luma_rise", "frame_difference")


def test_cli_offers_the_estimators_text_methods() -> None:
    """The CLI cannot import the aligner at parse time (start-up cost), so it spells the methods out: they must
    be exactly ``TextMethod``'s."""
    from avalign.cli import build_parser

    parser = build_parser()
    measure = next(a for a in parser._subparsers._group_actions[0].choices["measure"]._actions  # noqa: SLF001
                   if "--text-method" in a.option_strings)
    assert tuple(measure.choices) == aligner.estimators.TEXT_METHODS and measure.default == "auto"
