"""Speech with known word times, from libespeak-ng through ctypes.

espeak-ng reports, while it synthesizes, a WORD event where each word begins and a PHONEME event
where each phoneme begins, each with the output sample index at 22050 Hz. We turn those events
into word intervals ``[start, stop)`` on the speech's own clock (sample 0 = 0 s)::

    events   WORD(the) D  @2  WORD(cat) k  a  t  WORD(sat) _:  s  a  t   _:  END
    samples  0         286     2632     3800 ...  10199    10210 ...     31251
    words    [the ............)[cat ..........)  [sat ..................)

Rules (one place, stated once):

- start of a word = the first non-pause phoneme after its WORD event (a WORD event may be emitted
  before a pause ``_``/``_:``; the acoustic onset is the first real phoneme);
- stop of a word = the earliest of: the next word's start, the first pause phoneme or END event after
  the word's start, the end of the audio;
- espeak sometimes speaks two unstressed words as one unit and emits one WORD event for both
  ("in the"); tokens without their own event are joined to the previous word (text ``"in the"``).
  :data:`avalign.synth.SENTENCES` is curated so that this does not happen there.

Times come from the event's ``sample`` field (exact sample index), not ``audio_position`` (whole ms,
truncated). The voice (``en-us``) and the rate are fixed, so the output is deterministic.
"""
from __future__ import annotations

import ctypes
import base64
import functools
import json
import logging
import re
import subprocess
import sys
from dataclasses import dataclass
from typing import Sequence

import numpy as np

logger = logging.getLogger(__name__)

__all__ = ["ESPEAK_SAMPLE_RATE", "Speech", "SpokenWord", "synthesize_speech", "word_onset_energy_ratios"]

ESPEAK_SAMPLE_RATE = 22050
"""Output rate of libespeak-ng (returned by ``espeak_Initialize``)."""

_AUDIO_OUTPUT_SYNCHRONOUS = 2
_INITIALIZE_PHONEME_EVENTS = 1
_POS_CHARACTER = 1
_PARAM_RATE = 1
_EV_LIST_TERMINATED = 0
_EV_WORD = 1
_EV_END = 5
_EV_PHONEME = 7


class _EventId(ctypes.Union):
    _fields_ = [("number", ctypes.c_int), ("name", ctypes.c_char_p), ("string", ctypes.c_char * 8)]


class _Event(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("unique_identifier", ctypes.c_uint),
        ("text_position", ctypes.c_int),
        ("length", ctypes.c_int),
        ("audio_position", ctypes.c_int),
        ("sample", ctypes.c_int),
        ("user_data", ctypes.c_void_p),
        ("id", _EventId),
    ]


_Callback = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.POINTER(_Event))


@dataclass(frozen=True)
class SpokenWord:
    """One word of synthesized speech, on the speech's own clock (sample 0 at 0 s)."""

    text: str
    """The word as written, punctuation stripped (two tokens joined by a space if espeak merged them)."""
    start_seconds: float
    """Acoustic onset: the first non-pause phoneme of the word."""
    stop_seconds: float
    """End (excluded): next word's onset, or the following pause / END event, or the end of the audio."""


@dataclass(frozen=True)
class Speech:
    """Mono speech with its word intervals."""

    samples: np.ndarray
    """float32 ``[N]`` in [-1, 1]."""
    sample_rate: int
    """Samples per second (22050 for espeak-ng)."""
    words: tuple[SpokenWord, ...]
    """Words in order, non-overlapping, half-open ``[start_seconds, stop_seconds)``."""

    def __repr__(self) -> str:
        return f"Speech(samples=[{self.samples.shape[0]}], sample_rate={self.sample_rate}, words={len(self.words)})"


@dataclass(frozen=True)
class _RawEvent:
    kind: int
    text_position: int
    sample: int
    phoneme: str


def _tokens(text: str) -> list[tuple[int, str]]:
    """Whitespace tokens with their 1-based character position and punctuation-stripped text."""
    tokens = []
    for match in re.finditer(r"\S+", text):
        stripped = match.group().strip(".,;:!?\"'()")
        if stripped:
            tokens.append((match.start() + 1, stripped))
    return tokens


def _run_espeak(text: str, *, voice: str, rate_wpm: int, library: str) -> tuple[np.ndarray, list[_RawEvent]]:
    """Synthesize in this process (call once per process); int16 samples and the raw events."""
    lib = ctypes.CDLL(library)
    sample_rate = lib.espeak_Initialize(_AUDIO_OUTPUT_SYNCHRONOUS, 0, None, _INITIALIZE_PHONEME_EVENTS)
    if sample_rate != ESPEAK_SAMPLE_RATE:
        raise RuntimeError(f"espeak_Initialize returned {sample_rate = }, expected {ESPEAK_SAMPLE_RATE}; "
                           "is espeak-ng-data installed?")
    chunks: list[np.ndarray] = []
    events: list[_RawEvent] = []

    def on_synth(wav, num_samples, event_ptr) -> int:  # noqa: ANN001 (ctypes callback)
        if num_samples > 0:
            chunks.append(np.ctypeslib.as_array(wav, shape=(num_samples,)).copy())
        i = 0
        while event_ptr[i].type != _EV_LIST_TERMINATED:
            ev = event_ptr[i]
            phoneme = ev.id.string.decode("ascii", "replace") if ev.type == _EV_PHONEME else ""
            events.append(_RawEvent(ev.type, ev.text_position, ev.sample, phoneme))
            i += 1
        return 0

    callback = _Callback(on_synth)  # kept alive by this frame until espeak_Terminate
    try:
        lib.espeak_SetSynthCallback(callback)
        if lib.espeak_SetVoiceByName(voice.encode()) != 0:
            raise ValueError(f"espeak-ng has no voice {voice = }; try 'en-us'")
        lib.espeak_SetParameter(_PARAM_RATE, int(rate_wpm), 0)
        data = text.encode("ascii")
        buffer = ctypes.create_string_buffer(data)
        status = lib.espeak_Synth(buffer, len(data) + 1, 0, _POS_CHARACTER, 0, 0, None, None)
        if status != 0:
            raise RuntimeError(f"espeak_Synth failed with {status = } for {text = }")
        lib.espeak_Synchronize()
    finally:
        lib.espeak_Terminate()
    pcm = np.concatenate(chunks) if chunks else np.zeros(0, np.int16)
    return pcm, events


def _run_espeak_in_child(text: str, *, voice: str, rate_wpm: int, library: str) -> tuple[np.ndarray, list[_RawEvent]]:
    """Run :func:`_run_espeak` in a fresh interpreter (this file as a script, so torch is not imported); float32
    samples (a new array each call) and the raw events.

    libespeak-ng keeps global state: initialising it a second time in one process hangs or mixes the
    events of two utterances. A child process per utterance costs ~0.2 s (more from a large parent), so the
    replies are memoised per process (:func:`_espeak_reply`): the output for one text, voice and rate is
    deterministic, and generators and tests speak the same few sentences many times.
    """
    pcm, events = _espeak_reply(text, voice, rate_wpm, library)
    return np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0, list(events)


@functools.lru_cache(maxsize=64)
def _espeak_reply(text: str, voice: str, rate_wpm: int, library: str) -> tuple[bytes, tuple[_RawEvent, ...]]:
    """The child's reply: little-endian int16 PCM bytes and the events (immutable; a failure is not memoised)."""
    request = json.dumps({"text": text, "voice": voice, "rate_wpm": rate_wpm, "library": library})
    result = subprocess.run([sys.executable, __file__], input=request.encode(), capture_output=True,
                            check=False, timeout=120)
    if result.returncode != 0:
        raise RuntimeError(f"espeak child failed ({result.returncode}): {result.stderr.decode()[-2000:]}")
    reply = json.loads(result.stdout)
    return base64.b64decode(reply["pcm_s16le"]), tuple(_RawEvent(*event) for event in reply["events"])


def synthesize_speech(text: str, *, voice: str = "en-us", rate_wpm: int = 165,
                      library: str = "libespeak-ng.so.1") -> Speech:
    """Speak ``text`` with espeak-ng and return the samples and word intervals.

    Args:
        text: ASCII text, one or more sentences.
        voice: espeak-ng voice name.
        rate_wpm: speaking rate in words per minute (espeak's 80..450).
        library: shared library to load.

    Returns:
        :class:`Speech` at 22050 Hz; word rules in the module docstring. One text, voice and rate is synthesised
        once per process (the last 64 are kept); each call returns its own samples array.

    Example:
        >>> speech = synthesize_speech("Seven bright lamps")
        >>> [w.text for w in speech.words]
        ['Seven', 'bright', 'lamps']
    """
    if not text.isascii() or not text.strip():
        raise ValueError(f"text must be non-empty ASCII, got {text = }")
    if not 80 <= rate_wpm <= 450:
        raise ValueError(f"rate_wpm must be in [80, 450], got {rate_wpm = }")
    samples, events = _run_espeak_in_child(text, voice=voice, rate_wpm=rate_wpm, library=library)
    total = samples.shape[0]
    tokens = _tokens(text)

    # Group tokens by WORD event (match by text position); collect each event's first real phoneme.
    groups: list[dict] = []
    for index, ev in enumerate(events):
        if ev.kind != _EV_WORD:
            continue
        onset = ev.sample
        for later in events[index + 1:]:
            if later.kind == _EV_WORD:
                break
            if later.kind == _EV_PHONEME and not later.phoneme.startswith("_"):
                onset = later.sample
                break
        groups.append({"position": ev.text_position, "onset": onset, "texts": []})
    if not groups:
        raise RuntimeError(f"espeak-ng reported no WORD events for {text = }")
    for position, token in tokens:
        owner = [g for g in groups if g["position"] <= position]
        (owner[-1] if owner else groups[0])["texts"].append(token)
    groups = [g for g in groups if g["texts"]]
    merged = [" ".join(g["texts"]) for g in groups if len(g["texts"]) > 1]
    if merged:
        logger.warning("espeak merged words into one event: %s", merged)

    boundaries = sorted(ev.sample for ev in events
                        if ev.kind == _EV_END or (ev.kind == _EV_PHONEME and ev.phoneme.startswith("_")))
    words = []
    for i, group in enumerate(groups):
        onset = group["onset"]
        stop = total
        if i + 1 < len(groups):
            stop = min(stop, groups[i + 1]["onset"])
        after = [b for b in boundaries if b > onset]
        if after:
            stop = min(stop, after[0])
        if stop <= onset:
            raise RuntimeError(f"empty word interval for {group['texts']} at sample {onset} in {text = }")
        words.append(SpokenWord(" ".join(group["texts"]), onset / ESPEAK_SAMPLE_RATE, stop / ESPEAK_SAMPLE_RATE))
    return Speech(samples=samples, sample_rate=ESPEAK_SAMPLE_RATE, words=tuple(words))


def word_onset_energy_ratios(speech: Speech, *, window_seconds: float = 0.03) -> np.ndarray:
    """RMS in ``[start, start + window)`` of each word divided by the RMS of all voiced audio.

    A sanity check of the event timing: a word that really begins at ``start_seconds`` has energy right
    after it (ratio well above 0); silence there would mean the events are misread.
    """
    x = speech.samples.astype(np.float64)
    voiced = x[np.abs(x) > 1e-4]
    reference = float(np.sqrt(np.mean(voiced ** 2))) if voiced.size else 0.0
    if reference == 0.0:
        raise ValueError("speech is silent; cannot check word onsets")
    width = max(1, int(round(window_seconds * speech.sample_rate)))
    ratios = []
    for word in speech.words:
        start = int(round(word.start_seconds * speech.sample_rate))
        segment = x[start:start + width]
        ratios.append(float(np.sqrt(np.mean(segment ** 2))) / reference if segment.size else 0.0)
    return np.asarray(ratios)


def _check_sentences(sentences: Sequence[str]) -> None:  # pragma: no cover - developer helper
    for sentence in sentences:
        speech = synthesize_speech(sentence)
        print(sentence, [(w.text, round(w.start_seconds, 3), round(w.stop_seconds, 3)) for w in speech.words],
              np.round(word_onset_energy_ratios(speech), 2))


def _child_main() -> None:
    """Entry point of the child process: JSON request on stdin, JSON reply on stdout."""
    request = json.loads(sys.stdin.buffer.read())
    pcm, events = _run_espeak(request["text"], voice=request["voice"], rate_wpm=request["rate_wpm"],
                              library=request["library"])
    reply = {"pcm_s16le": base64.b64encode(pcm.astype("<i2").tobytes()).decode("ascii"),
             "events": [[e.kind, e.text_position, e.sample, e.phoneme] for e in events]}
    sys.stdout.write(json.dumps(reply))


if __name__ == "__main__":
    _child_main()
