"""``avcore.sample_media``: the one rule by which the loader, ``preprocess``, ``report`` and ``demo`` pick a sample's
media and its separate audio (it was written out in four places; adv68 found report and preprocess disagreeing)."""
from __future__ import annotations

import pytest

from avcore import sample_media


@pytest.mark.parametrize("members, expected", [
    ({"mp4", "m4a", "json", "txt"}, ("mp4", "m4a")),          # video2dataset: video-only mp4 + its audio
    ({"mkv", "m4a", "wav"}, ("mkv", "wav")),                  # the first of AUDIO_EXTENSIONS (flac, wav, mp3, m4a…)
    ({"mov", "mp4"}, ("mp4", None)),                          # two videos: the first of VIDEO_EXTENSIONS, no audio
    ({"m4a", "wav"}, ("wav", None)),                          # audio only: it is the media, nothing separate
    ({"flac"}, ("flac", None)),
    ({"srt", "json"}, (None, None)),                          # no media
    ({"MP4", "m4a"}, ("m4a", None)),                          # extensions are lower case (split_key's)
])
def test_the_media_and_the_separate_audio_of_a_sample(members, expected):
    assert sample_media(members) == expected


def test_a_sample_dict_is_read_by_its_keys():
    sample = {"__key__": "k", "__url__": "s.tar", "mp4": b"", "m4a": b"", "txt": b"a caption"}
    assert sample_media(sample) == ("mp4", "m4a")
