"""``avalign.synth.wild_specs``: a clip is named by its range and seed (the position in the range decides durations
and talking heads), and ``tests.conftest.wild_clip`` makes the clip of the named range that holds the seed."""
from __future__ import annotations

from avalign.synth import TUNE_SEEDS, wild_specs


def test_the_position_in_the_range_decides_talking_heads_and_long_clips() -> None:
    tune = wild_specs(TUNE_SEEDS)
    assert [s.seed for s in tune] == list(TUNE_SEEDS)
    heads = [i for i, s in enumerate(tune) if not s.events]
    assert heads == [3, 11, 19]  # index % 8 == 3: talking heads, no events
    assert [i for i, s in enumerate(tune) if s.duration_seconds >= 60.0] == [5, 17]  # index % 12 == 5: long
    assert wild_specs([1003])[0].events  # alone, seed 1003 sits at position 0: not a talking head
    assert wild_specs([1003])[0] != tune[3]
    for i in (0, 1, 2, 6, 13, 16):  # other positions: the same clip alone or in its range
        assert wild_specs([TUNE_SEEDS[i]])[0] == tune[i]
