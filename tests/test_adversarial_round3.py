"""Regression tests of the third adversarial round (BENCHMARKS.md, "Adversarial round three"): each input is
generated here (tiny tar shards of one ffmpeg clip); oracles are the keys written into the shards."""
from __future__ import annotations

import logging

import pytest

import loaders
from tests import hostile_inputs as hostile

OPTIONS = dict(frame_size=(16, 16), budgets=(100, 64_000, 64), window_seconds=None, max_items=2)


@pytest.fixture(scope="module")
def clip_bytes(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("round3_clip") / "clip.mp4"
    hostile.clip(path, seconds=1.0)
    return path.read_bytes()


def write_shard(path, keys, media: bytes) -> str:
    members = []
    for key in keys:
        members += [(f"{key}.mp4", media), (f"{key}.txt", f"a caption for {key}".encode())]
    path.write_bytes(hostile.tar_bytes(members))
    return str(path)


# ------------------------------------------------------------------------- more ranks than shards


def test_more_ranks_than_shards_is_refused_where_every_rank_would_stop_at_once(tmp_path, clip_bytes):
    # Before: with even_batches="drop" (the default) the ranks with no shard have no first batch, so under
    # torch.distributed every rank stopped at once: 0 batches everywhere, no error (3 gloo ranks over 2 shards).
    urls = [write_shard(tmp_path / f"s{i}.tar", [f"s{i}k0"], clip_bytes) for i in range(2)]
    with pytest.raises(ValueError, match=r"world_size = 3 ranks but only 2 shard\(s\): ranks 2\.\.2 get no shard"):
        loaders.make_dataset(urls, seed=0, rank=0, world_size=3, **OPTIONS)
    with pytest.raises(ValueError, match="even_batches='drop'"):
        loaders.make_loader(urls, seed=0, rank=2, world_size=3, **OPTIONS)


def test_more_ranks_than_shards_with_padding_warns_and_the_empty_rank_only_pads(tmp_path, clip_bytes, caplog):
    urls = [write_shard(tmp_path / f"s{i}.tar", [f"s{i}k0"], clip_bytes) for i in range(2)]
    with caplog.at_level(logging.WARNING):
        ds = loaders.make_dataset(urls, seed=0, rank=2, world_size=3, even_batches="pad", **OPTIONS)
    assert "ranks 2..2 get no shard" in caplog.text
    assert [b.num_items for b in ds] == []  # not distributed: nothing to pad against; rank 2 has no data
    loaders.make_dataset(urls, seed=0, rank=1, world_size=2, **OPTIONS)  # as many ranks as shards: fine


# ------------------------------------------------------------------------- resume on changed shards


def _resume_after_change(tmp_path, media: bytes, change) -> tuple[list[str], list[str]]:
    """Two batches of an epoch over 3 shards x 4 samples, the state saved, ``change(paths)`` applied to the shards,
    then the rest of the epoch from the state: (keys delivered before the save, keys after the resume)."""
    paths = [tmp_path / f"s{i}.tar" for i in range(3)]
    for i, path in enumerate(paths):
        write_shard(path, [f"s{i}k{j}" for j in range(4)], media)
    urls = [str(p) for p in paths]
    loader = loaders.make_loader(urls, seed=0, buffer_size=3, **OPTIONS)
    batches = iter(loader)
    first = [key for _ in range(2) for key in next(batches).sample_keys]
    state = loader.state_dict()
    change(paths)
    resumed = loaders.make_loader(urls, seed=0, buffer_size=3, **OPTIONS)
    resumed.load_state_dict(state)
    return first, [key for batch in resumed for key in batch.sample_keys]


def test_resume_on_unchanged_shards_delivers_each_sample_once(tmp_path, clip_bytes):
    first, rest = _resume_after_change(tmp_path, clip_bytes, lambda paths: None)
    assert sorted(first + rest) == sorted(f"s{i}k{j}" for i in range(3) for j in range(4))


def test_resume_on_reordered_shards_raises_instead_of_repeating_and_losing_samples(tmp_path, clip_bytes):
    # Before: the resumed epoch delivered s1k0, s2k0, s0k0 a second time and never s*k3, with no message.
    def reorder(paths):
        for i, path in enumerate(paths):
            write_shard(path, [f"s{i}k{j}" for j in (3, 1, 0)], clip_bytes)

    with pytest.raises(RuntimeError, match=r"s\d\.tar' was modified since the loader state was saved: its sample \d "
                                           r"was 's\dk\d' and is now 's\dk\d'"):
        _resume_after_change(tmp_path, clip_bytes, reorder)


def test_resume_on_replaced_shards_raises_instead_of_mixing_new_samples_in(tmp_path, clip_bytes):
    # Before: the buffered item 's2k1' came back as 'new2k1' (the packer's key and the batch's differed), and the
    # rest of the epoch was the new shards' samples, with no message.
    def replace(paths):
        for i, path in enumerate(paths):
            write_shard(path, [f"new{i}k{j}" for j in range(4)], clip_bytes)

    with pytest.raises(RuntimeError, match=r"modified since the loader state was saved.*'s\dk\d'.* is now 'new\dk\d'"):
        _resume_after_change(tmp_path, clip_bytes, replace)


# ------------------------------------------------------------------------- tokenizers with odd output


@pytest.mark.parametrize(
    ("output", "match"),
    [
        (([1.5, 2.7], [(0, 1), (1, 2)]), r"token id that is not an integer: 1\.5 \(float\)"),  # before: ids 1, 2
        (([1, 2], [(0.5, 1), (1, 2)]), r"token offset that is not an integer: 0\.5 \(float\)"),
        ((["a", "b"], [(0, 1), (1, 2)]), r"token id that is not an integer: 'a' \(str\)"),
    ],
)
def test_a_tokenizer_returning_non_integers_is_refused_not_truncated(output, match):
    from loaders.pipeline import encode_text

    with pytest.raises(TypeError, match=match):
        encode_text(lambda text: output, "hello world")


def test_integer_like_tokenizer_output_is_kept():
    import numpy as np
    import torch

    from loaders.pipeline import encode_text

    ids, offsets = encode_text(lambda text: (torch.tensor([7, 8]), np.array([[0, 5], [6, 11]])), "hello world")
    assert ids == [7, 8] and offsets == [(0, 5), (6, 11)]


# ------------------------------------------------------------------------- containers FFmpeg reads


@pytest.mark.parametrize("suffix", ["ts", "m2ts", "3gp", "flv"])
def test_common_containers_are_media_in_the_loader_with_ffprobes_frame_times(tmp_path, suffix):
    # Before: a '.ts' / '.m2ts' / '.3gp' / '.flv' member was not media: the sample was skipped as missing_video,
    # and `avalign preprocess` ignored such files in a directory without a record.
    import numpy as np

    from tests.conftest import ffprobe_frame_times

    path = tmp_path / f"clip.{suffix}"
    media = hostile.clip(path, seconds=1.0)
    shard = tmp_path / "s.tar"
    shard.write_bytes(hostile.tar_bytes([(f"k.{suffix}", media), ("k.txt", b"a caption")]))
    ds = loaders.make_dataset([str(shard)], seed=0, **OPTIONS)
    batches = list(ds)
    assert [key for b in batches for key in b.sample_keys] == ["k"] and not ds.stats.skipped_samples
    pts = loaders.read_video(media).pts_seconds.numpy()
    np.testing.assert_array_equal(pts, ffprobe_frame_times(path))
    assert sum(int(b.cu_seqlens_frames[-1]) for b in batches) == len(pts)  # every frame reached the batch


def test_preprocess_plans_common_containers_from_a_directory(tmp_path):
    from avalign.preprocess import preprocess

    raw = tmp_path / "raw"
    raw.mkdir()
    for stem, suffix in (("a", "ts"), ("b", "mpg"), ("c", "3gp")):
        (raw / f"{stem}.{suffix}").write_bytes(b"not decoded by a dry run")
        (raw / f"{stem}.srt").write_text("1\n00:00:00,000 --> 00:00:00,500\nhello\n")
    result = preprocess(str(raw), str(tmp_path / "out"), dry_run=True, progress=False)
    assert sorted(k for keys in result.keys_by_shard.values() for k in keys) == ["a", "b", "c"]
    assert result.num_skipped == 0


# ------------------------------------------------------------------------- members out of order


def test_a_tar_written_by_extension_names_the_cause_and_the_fix():
    # `tar cf s.tar *.mp4 *.srt` puts every transcript after all the media: each sample is delivered without its
    # transcript and each transcript is refused. Before, the message said only "appears again after other keys".
    from loaders.shards import ShardError, group_by_key

    members = [("a.mp4", b"1"), ("b.mp4", b"2"), ("a.srt", b"3"), ("b.srt", b"4")]
    reports = []
    samples = list(group_by_key(members, url="s.tar", report=lambda url, key, reason: reports.append((key, reason))))
    assert [sorted(k for k in s if not k.startswith("__")) for s in samples] == [["mp4"], ["mp4"]]
    assert reports == [("a", "stray_member"), ("b", "stray_member")]  # members dropped, not skipped samples (adv43 F7)
    with pytest.raises(ShardError, match=r"member 'a\.srt'.*must be adjacent in the tar.*tar --sort=name"):
        list(group_by_key(members, url="s.tar", on_error="raise"))


def test_preprocess_says_which_files_of_a_directory_it_ignores(tmp_path, caplog):
    # Before: a folder of .mxf files (or any extension that is not media) was planned as empty, with no word on why.
    from avalign.preprocess import preprocess

    raw = tmp_path / "raw"
    raw.mkdir()
    for name in ("a.mxf", "b.mxf", "notes.docx", ".hidden.mxf", "c.srt"):
        (raw / name).write_bytes(b"x")
    with caplog.at_level(logging.WARNING):
        result = preprocess(str(raw), str(tmp_path / "out"), dry_run=True, progress=False)
    assert "3 file(s) ignored, not media, transcripts or captions: .docx (1), .mxf (2)" in caplog.text
    assert result.num_skipped == 1  # c.srt: missing_media, as before


# ------------------------------------------------------------------------- a media file given as the transcript


def test_media_given_as_the_transcript_is_called_binary_not_a_wrong_encoding(clip_bytes):
    # Before: "cannot decode as utf-8 ...; hint: re-save the transcript as UTF-8" for an MP4.
    with pytest.raises(loaders.TranscriptError, match=r"clip\.srt: byte \d+: cannot decode as utf-8 .*hint: the file "
                                                      r"holds NUL bytes: it is binary \(media\?\)"):
        loaders.read_transcript(clip_bytes, name="clip.srt")
    # Text that is not UTF-8 is read as cp1252 (round 39), so this one is no longer refused:
    latin = loaders.read_transcript("1\n00:00:00,000 --> 00:00:01,000\ncaf\u00e9\n".encode("latin-1"), name="clip.srt")
    assert [s.text for s in latin.spans] == ["caf\u00e9"]


# ------------------------------------------------------------------------- report's --out


@pytest.mark.parametrize(("out", "match"), [("a_file", "--out .* exists and is not a directory"),
                                            ("a_file/sub", "cannot create --out .*: Not a directory")])
def test_report_refuses_a_bad_out_before_measuring_anything(tmp_path, capsys, out, match):
    # Before: a traceback (FileExistsError / NotADirectoryError), and only after every clip had been measured.
    # With --on-error raise, the corrupt clip would stop the report first if it were measured first.
    import re

    from avalign import cli

    (tmp_path / "a_file").write_text("x")
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "clip.mp4").write_bytes(b"not media")
    code = cli.main(["report", str(raw), "--out", str(tmp_path / out), "--no-progress", "--on-error", "raise"])
    err = capsys.readouterr().err
    assert code == 2 and re.search(f"avalign report: error: {match}; hint", err), err


# ------------------------------------------------------------------------- read_audio's window


@pytest.mark.parametrize(("bound", "value"), [("start_seconds", float("nan")), ("stop_seconds", float("nan")),
                                              ("start_seconds", float("-inf")), ("stop_seconds", float("inf"))])
def test_read_audio_refuses_a_window_bound_that_is_not_finite(clip_bytes, bound, value):
    # Before: start_seconds=nan returned the whole audio (with a numpy cast warning); read_video already refused it.
    with pytest.raises(ValueError, match=f"{bound} must be finite, got {bound} = {value!r}"):
        loaders.read_audio(clip_bytes, **{bound: value})


def test_preprocess_of_a_tar_written_by_extension_says_the_samples_were_kept_without_their_transcripts(tmp_path):
    # Before: "sample 'a' dropped (duplicate_key): ... an earlier complete copy is kept", while 'a' was written
    # (without its transcript).
    from avalign.preprocess import list_inputs, preprocess

    shard = tmp_path / "s.tar"
    shard.write_bytes(hostile.tar_bytes([("a.mp4", b"1"), ("b.mp4", b"2"), ("a.srt", b"3"), ("b.srt", b"4")]))
    result = preprocess(str(shard), str(tmp_path / "out"), dry_run=True, progress=False)
    assert sorted(k for keys in result.keys_by_shard.values() for k in keys) == ["a", "b"]
    rows = list_inputs(str(shard)).skipped
    assert [(r["key"], r["reason"]) for r in rows] == [("a", "stray_member"), ("b", "stray_member")]
    assert all(f"sample {r['key']!r} is in the output without it" in r["message"] and "must be adjacent" in r["message"]
               for r in rows), rows


# ------------------------------------------------------------------------- measure: spans outside the media


def test_measure_says_how_many_transcript_spans_lie_outside_the_media(tmp_path, clip_bytes, capsys):
    # Before: a cue at 600 s on a 1-s clip vanished from the text output with no word (the JSON has the count).
    import json

    from avalign import cli

    clip = tmp_path / "clip.mp4"
    clip.write_bytes(clip_bytes)
    srt = tmp_path / "clip.srt"
    srt.write_text("1\n00:00:00,100 --> 00:00:00,600\nhello\n\n2\n00:10:00,000 --> 00:10:01,000\nfar past\n")
    assert cli.main(["measure", str(clip), "--transcript", str(srt), "--av-offset-ms", "0", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert [s["text"] for s in record["segments"]] == ["hello"] and record["aligned"]["spans_outside"] == 1
    assert cli.main(["measure", str(clip), "--transcript", str(srt), "--av-offset-ms", "0"]) == 0
    assert "1 word(s)/segment(s) of the transcript lie outside the media" in capsys.readouterr().out


# ------------------------------------------------------------------------- preprocess: cleaned keys


def test_preprocess_manifest_maps_a_cleaned_key_back_to_its_file(tmp_path, clip_bytes):
    # Before: 'clip één.mp4' became key 'clip___n' and nothing in manifest.jsonl said which file it was.
    import json

    from avalign.preprocess import preprocess

    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "clip één.mp4").write_bytes(clip_bytes)
    preprocess(str(raw), str(tmp_path / "out"), progress=False)
    rows = [json.loads(line) for line in (tmp_path / "out" / "manifest.jsonl").read_text().splitlines()]
    # (letters of any script stay in keys since round 37: 'clip_één', the space alone cleaned; it was 'clip___n')
    assert [(r["key"], r["source"]) for r in rows] == [("clip_één", str(raw / "clip één.mp4"))]


# ------------------------------------------------------------------------- an output frame size nothing can decode


def test_a_frame_size_over_max_pixels_is_a_configuration_error_not_an_epoch_of_decode_skips(tmp_path, clip_bytes):
    # Before: frame_size=(100000, 100000) made every sample try a 1.5 TB buffer, fall back to decord, and be
    # skipped as 'decode'; the epoch ended with "every sample of epoch 0 was skipped ... {'decode': 4}".
    urls = [write_shard(tmp_path / "s0.tar", ["k0"], clip_bytes)]
    options = dict(OPTIONS, frame_size=(100_000, 100_000))
    with pytest.raises(ValueError, match=r"frame_size = \(100000, 100000\) is 10000000000 pixels a frame, over "
                                         r"8294400 \(3840x2160, or max_pixels when larger\)"):
        loaders.make_loader(urls, seed=0, **options)
    loaders.make_dataset(urls, seed=0, **dict(options, max_pixels=10_000_000_000))  # the limit is the user's to raise


# ------------------------------------------------------------------------- preprocess --reencode mp4


def test_reencode_pads_an_odd_frame_size_and_keeps_the_frame_times(tmp_path):
    # Before: libx264 refused "width not divisible by 2 (33x25)" and the sample was skipped as 'decode' (the media
    # decodes fine; the re-encoder failed). The oracle: ffprobe's frame times of the source.
    import io
    import json
    import tarfile

    import numpy as np

    from avalign.preprocess import preprocess
    from tests.conftest import ffprobe_frame_times

    raw = tmp_path / "raw"
    raw.mkdir()
    hostile.clip(raw / "odd.mp4", seconds=1.0, size="33x25", container_args=("-pix_fmt", "yuv444p"))
    result = preprocess(str(raw), str(tmp_path / "out"), reencode="mp4", progress=False)
    assert result.num_skipped == 0
    with tarfile.open(tmp_path / "out" / "shard-000000.tar") as tar:
        data = tar.extractfile("odd.mp4").read()
        align = json.load(io.BytesIO(tar.extractfile("odd.align.json").read()))
    video = loaders.read_video(data)
    assert tuple(video.frames.shape[1:3]) == (26, 34)  # one black row and column
    np.testing.assert_array_equal(video.pts_seconds.numpy(), ffprobe_frame_times(raw / "odd.mp4"))
    assert align["video"]["num_frames"] == len(video.pts_seconds)


def test_preprocess_names_the_input_once_in_a_skip_message(tmp_path, caplog):
    # Before: "/…/bad.mp4: /…/bad.mp4: cannot open …" in skipped.jsonl, and three times in the log line.
    import json

    from avalign.preprocess import preprocess

    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "bad.mp4").write_bytes(b"\x00" * 64)
    with caplog.at_level(logging.WARNING):
        preprocess(str(raw), str(tmp_path / "out"), progress=False)
    (row,) = [json.loads(line) for line in (tmp_path / "out" / "skipped.jsonl").read_text().splitlines()]
    source = str(raw / "bad.mp4")
    assert row["reason"] == "decode" and row["message"].count(source) == 1, row
    (line,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("skipping")]
    assert line.count(source) == 1, line


# ------------------------------------------------------------------------- file URIs


def test_a_percent_encoded_file_uri_opens_its_shard(tmp_path, clip_bytes):
    # Before: Path.as_uri() of a shard under 'my shards ü/' ('file:///…/my%20shards%20%C3%BC/s%200.tar') was not found.
    folder = tmp_path / "my shards ü"
    folder.mkdir()
    shard = folder / "s 0.tar"
    write_shard(shard, ["k0", "k1"], clip_bytes)
    from loaders.shards import shard_samples

    assert "%20" in shard.as_uri()
    assert [s["__key__"] for s in shard_samples(shard.as_uri())] == ["k0", "k1"]
    assert [s["__key__"] for s in shard_samples("file://" + str(shard))] == ["k0", "k1"]  # unencoded: as before


def test_report_on_a_folder_without_media_counts_what_it_listed(tmp_path, capsys):
    # Before: "the input holds no media: nothing was reported or skipped" while report.json listed 2 skipped inputs.
    from avalign import cli

    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "a.mxf").write_bytes(b"x")
    (raw / "a.srt").write_text("1\n00:00:00,000 --> 00:00:00,500\nhello\n")
    assert cli.main(["report", str(raw), "--out", str(tmp_path / "rep"), "--fail-over-ms", "60", "--no-progress"]) == 1
    assert ("FAIL (no_media): the input holds no media: nothing was reported; 2 input(s) that are not media: "
            "missing_media 1, unknown_extension 1") in capsys.readouterr().out


# ------------------------------------------------------------------------- leaving a loader mid-epoch


_LEFT_MID_EPOCH: list = []
"""The loader iterator the script below leaves open: alive until its process exits, as a script's global is."""


def _leave_a_loader_mid_epoch(urls: list[str], out: str) -> None:
    """The script's body: take one batch and keep the iterator (``it = iter(loader); next(it)`` at module level)."""
    import torch

    # A forked child cannot run a parallel torch op once its parent's OpenMP pool has run one (libgomp is not
    # fork-safe: `torch.zeros(1 << 24).add_(1)` in the parent, then any such op in a fork child, hangs without
    # avalign). An earlier test of this file decoding in-process (the common containers) started that pool, so the
    # child hung in the collate's first `zero_()`, not at exit: one thread here, as a DataLoader worker has.
    torch.set_num_threads(1)
    loader = loaders.make_loader(urls, seed=0, num_workers=2, buffer_size=3, **OPTIONS)
    it = iter(loader)
    _LEFT_MID_EPOCH.append(it)
    with open(out, "w") as f:
        f.write(" ".join(next(it).sample_keys))


@pytest.mark.usefixtures("collector_on_test_objects")  # the pre-fork collection: this test's objects
def test_a_script_that_leaves_make_loader_mid_epoch_exits(tmp_path, clip_bytes):
    # Before: `it = iter(loader); next(it)` and the end of the script hung forever: at exit multiprocessing joined
    # the (non-daemonic) workers, which waited for a reader. The script runs in a forked multiprocessing process,
    # which ends through the same `multiprocessing.util._exit_function` an interpreter's exit runs (finalizers of
    # priority >= 0, then a join of every non-daemonic child), with the iterator still alive; no new interpreter.
    # The timeout below only detects the hang.
    import multiprocessing

    from loaders.media import heap_frozen_for_fork

    urls = [write_shard(tmp_path / f"s{i}.tar", [f"s{i}k{j}" for j in range(6)], clip_bytes) for i in range(3)]
    out = tmp_path / "batch.txt"
    script = multiprocessing.get_context("fork").Process(target=_leave_a_loader_mid_epoch, args=(urls, str(out)))
    with heap_frozen_for_fork():  # the child must never free an inherited decoder
        script.start()
    script.join(timeout=120)
    if script.is_alive():
        script.kill()  # its workers follow their parent (they poll getppid)
        script.join()
        pytest.fail("the script did not exit: its loader workers were never stopped")
    assert script.exitcode == 0
    assert {"s0k0", "s1k0", "s2k0"} & set(out.read_text().split())  # the batch it took


def test_resume_after_a_skipped_window_checks_the_tar_key_not_the_window_key(tmp_path):
    # The shard check compares the tar's key at a position: a sample skipped as over_budget names its window
    # ('a1@0'), which must not read as a changed shard on an exact resume of unchanged shards.
    media = hostile.clip(tmp_path / "c.mp4", seconds=1.0)

    def shard(path, entries):
        members = []
        for key, caption in entries:
            members += [(f"{key}.mp4", media), (f"{key}.txt", caption.encode())]
        path.write_bytes(hostile.tar_bytes(members))
        return str(path)

    urls = [shard(tmp_path / "a.tar", [("a0", "short"), ("a1", " ".join(f"w{i}" for i in range(200)))]),
            shard(tmp_path / "b.tar", [(f"b{i}", "short") for i in range(6)])]
    options = dict(seed=0, frame_size=(16, 16), budgets=(100, 64_000, 64), window_seconds=0.5, max_items=1,
                   buffer_size=1)
    full = [k for b in loaders.make_loader(urls, **options) for k in b.sample_keys]
    assert "a1@0" not in full and len(full) == 14  # a1's caption is over the token budget: skipped
    loader = loaders.make_loader(urls, **options)
    batches = iter(loader)
    first = [k for _ in range(7) for k in next(batches).sample_keys]
    state = loader.state_dict()
    assert [1, 1, "a1"] in state["read_keys"]  # the skip is the last sample read from a.tar
    resumed = loaders.make_loader(urls, **options)
    resumed.load_state_dict(state)
    assert first + [k for b in resumed for k in b.sample_keys] == full


# ------------------------------------------------------------------------- SRT entities


def test_srt_html_entities_are_decoded_as_in_webvtt():
    # Before: SRT kept '&amp;' (a word of its own for forced alignment and tokenizers) where WebVTT gave '&'.
    srt = b"1\n00:00:00,100 --> 00:00:00,900\n<i>Tom</i> &amp; Jerry &lt;3 &#39;99\n"
    vtt = b"WEBVTT\n\n00:00.100 --> 00:00.900\n<i>Tom</i> &amp; Jerry &lt;3 &#39;99\n"
    texts = [loaders.read_transcript(data, name=name).spans[0].text for data, name in ((srt, "a.srt"), (vtt, "a.vtt"))]
    assert texts == ["Tom & Jerry <3 '99", "Tom & Jerry <3 '99"]
