"""A tokenizer that returns UTF-8 byte offsets is one clear error before the first sample (adv43 F8).

Before: such a tokenizer (tiktoken-style) passed the ASCII probe ("hello world": bytes and characters agree), then
every sample with a non-ASCII character was skipped as ``error`` ("offsets outside the text"), with no word about
bytes versus characters.
"""
from __future__ import annotations

import pytest

import loaders
from loaders.pipeline import encode_text
from tests import hostile_inputs as hostile


def _byte_tokenizer(text):
    data = text.encode("utf-8")
    return list(data), [(i, i + 1) for i in range(len(data))]


def _ascii_only_tokenizer(text):
    data = text.encode("ascii")  # raises on a non-ASCII text: a per-sample failure, not a broken tokenizer
    return list(data), [(i, i + 1) for i in range(len(data))]


def _caption_only_shard(tmp_path) -> str:
    path = tmp_path / "captions.tar"
    path.write_bytes(hostile.tar_bytes([("k0.txt", b"a caption")]))
    return str(path)


def test_byte_offsets_are_refused_before_any_sample_naming_bytes_and_characters(tmp_path):
    loader = loaders.make_loader([_caption_only_shard(tmp_path)], seed=0, tokenizer=_byte_tokenizer,
                                 allow_empty_epoch=True)
    with pytest.raises(ValueError) as info:
        list(loader)
    offsets = [(i, i + 1) for i in range(13)]
    assert str(info.value) == (
        f"tokenizer function is unusable: on the probe text 'héllo wörld' it returned offsets {offsets!r}. They look "
        "like UTF-8 byte offsets: the text is 11 characters but 13 bytes, and the last offset ends at 13. Offsets must "
        "be character (str) offsets into the text, as a tokenizers.Tokenizer or a fast Hugging Face tokenizer gives "
        "them; convert byte offsets (e.g. tiktoken's) to character offsets in the callable.")
    assert info.value.tokenizer_probe is True


def test_a_sample_with_byte_offsets_says_so():
    with pytest.raises(ValueError, match=r"^tokenizer returned offsets outside the text \(length 4\): \[\(4, 5\)\]\. "
                                         r"They look like UTF-8 byte offsets: the text is 4 characters but 5 bytes"):
        encode_text(_byte_tokenizer, "Café")


def test_a_tokenizer_that_fails_on_non_ascii_text_is_not_refused_up_front(tmp_path):
    loader = loaders.make_loader([_caption_only_shard(tmp_path)], seed=0, tokenizer=_ascii_only_tokenizer,
                                 allow_empty_epoch=True)
    assert list(loader) == []
    assert encode_text(_ascii_only_tokenizer, "a b")[1] == [(0, 1), (1, 2), (2, 3)]
