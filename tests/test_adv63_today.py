"""adv63: adversarial round on the fourteenth session's changes (BENCHMARKS.md, "adv63").

Each test asserts against an oracle (ffprobe's frame times, the clip's whole audio as read, the unwindowed sample,
the bytes written) and failed before its fix.
"""
from __future__ import annotations

import numpy as np
import pytest

import loaders
from tests.conftest import ffprobe_frame_times, ntsc_clip_300_frames, write_tar


@pytest.fixture(scope="module")
def ntsc_clip(tmp_path_factory):
    """29.97 fps, 300 frames, 10.01 s of audio: the last 10 ms past frame 299 hold no frame."""
    path = tmp_path_factory.mktemp("adv63_ntsc") / "ntsc.mp4"
    ntsc_clip_300_frames(path)
    return path


def _lengths(batches, name):
    return [int(n) for b in batches for n in np.diff(getattr(b, name).numpy()[:b.num_items + 1])]


@pytest.mark.parametrize("window_seconds", [5.0, 10.0])
def test_a_budget_of_exactly_one_window_keeps_the_clip(ntsc_clip, tmp_path, window_seconds):
    """budgets sized to one window (window_seconds at 16 kHz): the merged last window (a 10 ms rest past the last
    frame joined to it) was 160 samples over the budget, and the whole clip was skipped as ``over_budget``. Now the
    rest stays a window of its own: every frame (ffprobe) and every sample (the unwindowed clip's) is batched."""
    shard = write_tar(tmp_path / "s.tar", [("ntsc.mp4", ntsc_clip.read_bytes())])
    unwindowed = list(loaders.make_dataset([str(shard)], seed=0, frame_size=(16, 16), budgets=(300, 200_000, 64),
                                           window_seconds=None, max_items=8))
    per_window = int(round(window_seconds * 16000))
    dataset = loaders.make_dataset([str(shard)], seed=0, frame_size=(16, 16), budgets=(300, per_window, 64),
                                   window_seconds=window_seconds, max_items=8)
    batches = list(dataset)
    assert dataset.stats.skipped == {}
    frames, samples = _lengths(batches, "cu_seqlens_frames"), _lengths(batches, "cu_seqlens_samples")
    assert sum(frames) == ffprobe_frame_times(ntsc_clip).size == 300
    assert sum(samples) == sum(_lengths(unwindowed, "cu_seqlens_samples")) == 160160  # 10.01 s
    assert max(samples) <= per_window


def test_a_dotted_initialism_before_a_hyphen_or_dash_is_said_as_its_letters():
    """"U.S.-based" was said "us based" (the dictionary word ``us``, ``AH S``): the initialism rule skipped a piece
    with dashes. Oracle: pocketsphinx's own dictionary, which spells ``u.s.`` as the letters' phones."""
    from aligner import estimators

    tokens = estimators.spoken_tokens("U.S.-based firms, the U.S.—U.K. deal, well-known")
    assert tokens == [("U.S.-based", ("u", "s", "based")), ("firms", ("firms",)), ("the", ("the",)),
                      ("U.S.—U.K.", ("u", "s", "u", "k")), ("deal", ("deal",)), ("well-known", ("well", "known"))]
    assert len(tokens) == len(estimators.written_words("U.S.-based firms, the U.S.—U.K. deal, well-known"))
    pytest.importorskip("pocketsphinx")
    decoder = estimators.new_decoder()
    said = " ".join(decoder.lookup_word(w) for w in tokens[0][1][:2])
    assert said == decoder.lookup_word("u.s.") != decoder.lookup_word("us")


def test_a_long_run_of_punctuation_inside_a_word_is_split_in_linear_time():
    """A hostile caption word of 40 000 characters ("a-.-. … b") took 36 s in spoken_tokens (and 18 s more in
    written_words): stripping its edges with ``^\\W+|\\W+$`` retried ``\\W+$`` at every position. Oracle: the text
    written (the word is itself, its edges being letters) and said as its two letters."""
    import time

    from aligner import estimators

    word = "a" + "-." * 20_000 + "b"
    started = time.perf_counter()
    tokens = estimators.spoken_tokens(f"{word} end")
    written = estimators.written_words(f"{word} end")
    assert time.perf_counter() - started < 5.0
    assert tokens == [(word, ("a", "b")), ("end", ("end",))]
    assert written == [word, "end"] and len(estimators.normalise_words(f"{word} end")) == 2
