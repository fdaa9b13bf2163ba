"""Regression tests of the fourth adversarial round (BENCHMARKS.md, "Adversarial round four": a training run in the
wild). Inputs are generated here (tiny tar shards of one ffmpeg clip); each test fails on the code before its fix."""
from __future__ import annotations

import errno
import logging
import sys

import pytest

from avalign import cli


# ------------------------------------------------------------------------- CLI: a full disk, a failed stdout


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_a_full_stdout_is_a_one_line_error_not_a_traceback(monkeypatch, capsys, json_flag):
    # Before: `avalign measure clip.mp4 --json > /dev/full` ended in a traceback (OSError: [Errno 28]), exit 1.
    # With --json the error document cannot be written either: the one line on stderr is all there is.
    def command(args):
        print('{"av_offset_ms": 0.0}')
        sys.stdout.flush()
        return 0

    monkeypatch.setattr(cli, "_cmd_demo", command)
    monkeypatch.setattr(sys, "stdout", open("/dev/full", "w"))
    assert cli.main(["demo", *json_flag]) == 2
    err = capsys.readouterr().err
    assert err.startswith("avalign demo: error: [Errno 28] No space left on device; hint: the disk")
    assert "Traceback" not in err


def test_a_write_error_in_an_output_directory_names_the_command(monkeypatch, capsys):
    # Before: `ulimit -f 20; avalign report clips/ --out rep/` ended in a traceback (OSError: [Errno 27]).
    def command(args):
        raise OSError(errno.EFBIG, "File too large")

    monkeypatch.setattr(cli, "_cmd_demo", command)
    assert cli.main(["demo"]) == 2
    assert capsys.readouterr().err == ("avalign demo: error: [Errno 27] File too large; hint: the disk (or a file-size "
                                       "limit) is full: what was written is incomplete; free space and rerun\n")


# ------------------------------------------------------------------------- a text unit over the token budget

import loaders  # noqa: E402
from tests import hostile_inputs as hostile  # noqa: E402


@pytest.fixture(scope="module")
def clip_bytes(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("round4_clip") / "clip.mp4"
    hostile.clip(path, seconds=1.0)
    return path.read_bytes()


def write_shard(path, keys, media: bytes, caption: str = "a caption for {key}") -> str:
    members = []
    for key in keys:
        members += [(f"{key}.mp4", media), (f"{key}.txt", caption.format(key=key).encode())]
    path.write_bytes(hostile.tar_bytes(members))
    return str(path)


def test_a_caption_over_the_token_budget_is_skipped_whole_without_cutting_the_clip(tmp_path, clip_bytes):
    # A caption of 4 tokens never fits a budget of 2 whatever the window. Before: window_seconds="auto" cut the clip
    # (10 windows for the audio budget, then 11, 12, 13), each window failed on the caption, and the skip named the
    # window 'k0@0'; with budgets=(1, 1, 1) that was 40 s per 2-s sample (476 s for 12 samples) before each skip.
    url = write_shard(tmp_path / "s.tar", ["k0"], clip_bytes)
    loader = loaders.make_loader([url], seed=0, frame_size=(16, 16), budgets=(10, 1600, 2), allow_empty_epoch=True)
    assert [b.sample_keys for b in loader] == []
    assert loader.stats.skipped_samples == ((url, "k0", "over_budget"),)


def test_an_audio_budget_under_10_ms_skips_the_clip_uncut_and_10_ms_windows_still_cut(tmp_path, clip_bytes, caplog):
    # Before: budgets=(300, 1, 512) cut the 1 s clip into 16,000 one-sample windows (then tried 16,001-16,003): minutes
    # per sample. A window must hold 10 ms (one log-mel hop at 16 kHz); the clip is skipped whole, by its own key.
    url = write_shard(tmp_path / "s.tar", ["k0"], clip_bytes, caption="")
    loader = loaders.make_loader([url], seed=0, frame_size=(16, 16), budgets=(300, 159, 512), allow_empty_epoch=True)
    with caplog.at_level(logging.WARNING):
        assert [b.sample_keys for b in loader] == []
    assert loader.stats.skipped_samples == ((url, "k0", "over_budget"),)
    assert "shorter than 10 ms" in caplog.text
    # 160 samples = exactly 10 ms at 16 kHz: still cut, into windows that each fit and together hold the whole clip.
    def item_samples(budgets):
        loader = loaders.make_loader([url], seed=0, frame_size=(16, 16), budgets=budgets)
        lengths = [n for b in loader for n in b.cu_seqlens_samples.diff().tolist() if n]
        assert loader.stats.skipped_samples == ()
        return lengths

    whole = item_samples((300, 10**6, 512))
    windows = item_samples((300, 160, 512))
    assert len(whole) == 1 and len(windows) >= whole[0] // 160
    assert max(windows) <= 160 and sum(windows) == whole[0]


# ------------------------------------------------------------------------- seeds and epochs


@pytest.mark.parametrize("seed, error, message", [
    (-1, ValueError, r"seed must be a non-negative int, got seed = -1"),  # before: numpy's "expected non-negative integer"
    (1.5, TypeError, r"seed must be an int \(numpy ints too\), got 1.5 \(float\)"),  # before: seed 1, silently
])
def test_a_seed_that_is_not_a_non_negative_int_is_refused_by_name(tmp_path, clip_bytes, seed, error, message):
    url = write_shard(tmp_path / "s.tar", ["k0"], clip_bytes)
    with pytest.raises(error, match=message):
        loaders.make_dataset([url], seed=seed, frame_size=(16, 16))


def test_set_epoch_refuses_what_is_not_an_epoch_and_takes_numpy_ints(tmp_path, clip_bytes):
    import numpy as np

    url = write_shard(tmp_path / "s.tar", ["k0"], clip_bytes)
    ds = loaders.make_dataset([url], seed=np.int64(3), frame_size=(16, 16))
    with pytest.raises(ValueError, match=r"epoch must be a non-negative int, below 9223372036854775808, got epoch = -1"):
        ds.set_epoch(-1)  # before: accepted; the epoch then failed with numpy's "expected non-negative integer"
    with pytest.raises(ValueError, match="below 9223372036854775808"):
        ds.set_epoch(2**64)  # before: "Overflow when unpacking long long"
    with pytest.raises(TypeError, match=r"got '2' \(str\)"):
        ds.set_epoch("2")  # before: epoch 2
    ds.set_epoch(np.int64(2))
    assert ds.state_dict()["epoch"] == 2 and ds.state_dict()["seed"] == 3


# ------------------------------------------------------------------------- tokenizer output


@pytest.mark.parametrize(("output", "error", "match"), [
    # before: -5 was kept as a token id (an embedding lookup fails on it, on the GPU a device-side assert)
    (([-5, 7], [(0, 5), (6, 11)]), ValueError, r"token id -5, outside \[0, 2\*\*63\)"),
    # before: "OverflowError: Python int too large to convert to C long", naming no tokenizer
    (([2**63, 7], [(0, 5), (6, 11)]), ValueError, r"token id 9223372036854775808, outside"),
    # before: "KeyError: 'offsets'" (a Hugging Face tokenizer called without return_offsets_mapping)
    ({"input_ids": [7, 8], "attention_mask": [1, 1]}, TypeError,
     r"keys \['attention_mask', 'input_ids'\], not ids .* return_offsets_mapping=True"),
    # before: "ValueError: too many values to unpack (expected 2)"
    (([7, 8], [(0, 5, 0), (6, 11, 0)]), TypeError, r"character offset that is not a \(start, stop\) pair: \(0, 5, 0\)"),
])
def test_unusable_tokenizer_output_is_named(output, error, match):
    from loaders.pipeline import encode_text

    with pytest.raises(error, match=match):
        encode_text(lambda text: output, "hello world")


# ------------------------------------------------------------------------- shard lists


def test_a_shard_listed_twice_is_read_twice_and_said_so(tmp_path, clip_bytes, caplog):
    # Before: a list joined twice by mistake read every sample of the repeated shard twice an epoch, with no message.
    import logging

    url = write_shard(tmp_path / "s0.tar", ["a", "b"], clip_bytes)
    other = write_shard(tmp_path / "s1.tar", ["c"], clip_bytes)
    with caplog.at_level(logging.WARNING):
        loader = loaders.make_loader([url, other, url], seed=0, frame_size=(16, 16), budgets=(100, 64_000, 64),
                                     window_seconds=None)
    assert f"1 shard URL(s) are listed more than once ({url!r} x2): each copy is read" in caplog.text
    assert sorted(k for b in loader for k in b.sample_keys) == ["a", "a", "b", "b", "c"]


def test_paths_in_a_shard_list_are_taken_as_a_single_path_is(tmp_path, clip_bytes):
    # Before: make_loader(Path) worked, make_loader([Path, Path]) raised "shard URL must be a non-empty string".
    paths = [tmp_path / "s0.tar", tmp_path / "s1.tar"]
    write_shard(paths[0], ["a"], clip_bytes)
    write_shard(paths[1], ["b"], clip_bytes)
    loader = loaders.make_loader(paths, seed=0, frame_size=(16, 16), budgets=(100, 64_000, 64), window_seconds=None)
    assert sorted(k for b in loader for k in b.sample_keys) == ["a", "b"]


# ------------------------------------------------------------------------- the skip path of unreadable media


def test_a_container_ffmpeg_cannot_open_is_refused_without_the_decord_fallback(caplog):
    # Before: every such sample forked the decord fallback (0.3 s wall a sample here; a shard of 10,000 of them took
    # ~37 min to skip) though decord, on FFmpeg too, opened none of 23 such containers among 176 corrupt mutants.
    import logging

    from loaders import read_video
    from loaders.errors import DecodeError

    with caplog.at_level(logging.WARNING), pytest.raises(DecodeError, match=r"cannot open garbage\.mp4: .*Invalid data"):
        read_video(b"\x00" * 100, name="garbage.mp4")
    assert "trying decord" not in caplog.text


# ------------------------------------------------------------------------- options truncated by int()


@pytest.mark.parametrize(("option", "match"), [
    (dict(rank=0.5, world_size=3), r"rank must be an int \(numpy ints too\), got 0.5"),  # before: rank 0
    (dict(budgets=(300.7, 64_000, 64)), r"budgets must be 3 positive ints .* got \(300.7, 64000, 64\)"),  # before: 300
    (dict(buffer_size=2.5), r"buffer_size must be an int \(numpy ints too\), got 2.5"),  # before: 2
])
def test_options_that_int_would_truncate_are_refused(tmp_path, clip_bytes, option, match):
    url = write_shard(tmp_path / "s.tar", ["k0"], clip_bytes)
    with pytest.raises(TypeError, match=match):
        loaders.make_dataset([url] * 3, seed=0, frame_size=(16, 16), **option)


def test_numpy_ints_are_taken_for_counts_as_for_seeds(tmp_path, clip_bytes):
    import numpy as np

    url = write_shard(tmp_path / "s.tar", ["k0"], clip_bytes)
    # before: "sample_rate must be a positive int, got np.int64(8000)" while np.int64 seeds were taken
    loader = loaders.make_loader([url], seed=np.int64(0), sample_rate=np.int64(8000), budgets=np.array([100, 64_000, 64]),
                                 frame_size=(16, 16), window_seconds=None)
    batch = next(iter(loader))
    assert batch.sample_keys == ("k0",) and int(batch.cu_seqlens_samples[1]) == 8000  # 1 s at 8 kHz


def test_ctrl_c_says_the_run_was_interrupted(monkeypatch, capsys):
    # Before: exit 130 and nothing on stderr; `avalign report` left its partial clips/ pages unexplained.
    def command(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_cmd_demo", command)
    assert cli.main(["demo"]) == 130
    assert capsys.readouterr().err == ("avalign demo: interrupted; what it wrote so far may be incomplete (preprocess: a "
                                       "rerun reuses its complete shards)\n")


def test_a_transcript_whose_media_is_in_another_shard_is_named_with_a_hint(tmp_path, clip_bytes):
    # Before: "no media member (have ['srt']; …)", nothing pointing at the other shard holding the media.
    from loaders.errors import SampleError

    media = tmp_path / "a.tar"
    media.write_bytes(hostile.tar_bytes([("k1.mp4", clip_bytes)]))
    text = tmp_path / "b.tar"
    text.write_bytes(hostile.tar_bytes([("k1.srt", b"1\n00:00:00,100 --> 00:00:00,900\nhello\n"), ("k2.mp4", clip_bytes)]))
    loader = loaders.make_loader([str(media), str(text)], seed=0, frame_size=(16, 16), on_error="raise")
    with pytest.raises(SampleError, match=r"have \['srt'\].*is its media in another shard\? a key's "
                                                         r"members must be adjacent in one shard") as info:
        list(loader)
    assert info.value.key == "k1" and info.value.reason == "missing_video"
