"""Pronunciations of words missing from pocketsphinx's dictionary, from espeak-ng's rules (optional).

Forced alignment can only place words its dictionary holds (pocketsphinx's ``cmudict-en-us.dict``, 134k words). Names,
brands and new words in captions ("Gregson", "Kubernetes") used to be left out of the alignment and of the result.
espeak-ng (Debian ``espeak-ng``, already what ``make env`` installs for the generator) spells any English word in IPA
by its rules; the IPA is mapped to the acoustic model's ARPAbet phones here and the word added to the decoder::

    "Gregson"  ──espeak-ng -q --ipa -v en-us──▶  ɡɹˈɛɡsən  ──IPA_TO_ARPABET──▶  G R EH G S AH N

Stress marks, syllable marks, length and tie bars are dropped (the model's phones carry no stress); a flap ``ɾ`` and
a glottal stop ``ʔ`` (American "butter", "button") are ``T``. A word whose IPA holds a symbol not in the table stays
out, as before. Without espeak-ng every missing word stays out (logged once).

Measured (BENCHMARKS.md, "Words missing from the dictionary: pronunciations from espeak-ng"): against the
dictionary's own pronunciations of 1,000 random dictionary words, 57 % identical and 11 % of phones different, mostly
unstressed vowels (``AH``/``IH``); on real read speech (pocketsphinx-testdata's LibriVox utterances, 71 words), each
word aligned with espeak-ng's pronunciation instead of the dictionary's starts where it did in 70 of 71 (the other
lost the dictionary's second pronunciation of "an"). The word times of words the dictionary holds never change.
"""
from __future__ import annotations

import logging
import shutil
import subprocess
import unicodedata
from typing import Optional, Sequence

logger = logging.getLogger(__name__)

__all__ = ["IPA_TO_ARPABET", "espeak_pronunciations", "ipa_to_arpabet"]

IPA_TO_ARPABET: dict[str, str] = {
    # consonants (affricates before their parts: the longest symbol is matched first)
    "tʃ": "CH", "dʒ": "JH", "p": "P", "b": "B", "t": "T", "d": "D", "k": "K", "ɡ": "G", "g": "G", "f": "F", "v": "V",
    "θ": "TH", "ð": "DH", "s": "S", "z": "Z", "ʃ": "SH", "ʒ": "ZH", "h": "HH", "m": "M", "n": "N", "ŋ": "NG",
    "l": "L", "ɫ": "L", "ɹ": "R", "r": "R", "w": "W", "j": "Y", "ɾ": "T", "ʔ": "T", "x": "K", "ç": "HH",
    # diphthongs and r-coloured vowels
    "eɪ": "EY", "aɪ": "AY", "aʊ": "AW", "ɔɪ": "OY", "oʊ": "OW", "əʊ": "OW", "oːɹ": "AO R", "ɔːɹ": "AO R",
    # vowels
    "iː": "IY", "i": "IY", "ɪ": "IH", "ᵻ": "IH", "e": "EH", "ɛ": "EH", "æ": "AE", "a": "AE", "ɑː": "AA", "ɑ": "AA",
    "ɒ": "AA", "ɔː": "AO", "ɔ": "AO", "ʌ": "AH", "ə": "AH", "ɐ": "AH", "ɚ": "ER", "ɜː": "ER", "ɜ": "ER", "ɝ": "ER",
    "ʊ": "UH", "uː": "UW", "u": "UW", "oː": "OW", "o": "OW",
}
"""espeak-ng's en-us IPA → the en-us acoustic model's phones (CMU ARPAbet without stress)."""
_SYMBOLS = sorted(IPA_TO_ARPABET, key=len, reverse=True)
_IGNORED = set("ˈˌ.‿ -_ːˑ")  # stress, syllable and length marks, word joins
_TIMEOUT_SECONDS = 20.0
_CACHE: dict[str, Optional[str]] = {}
_warned_missing = False


def ipa_to_arpabet(ipa: str) -> Optional[str]:
    """``ipa`` (one word, as espeak-ng writes it) as space-separated ARPAbet phones, or None when it holds a symbol
    that is not in :data:`IPA_TO_ARPABET` (or no phone at all).

    Example:
        >>> ipa_to_arpabet("ɡɹˈɛɡsən")
        'G R EH G S AH N'
    """
    text = unicodedata.normalize("NFC", ipa.strip())
    phones, i = [], 0
    while i < len(text):
        for symbol in _SYMBOLS:
            if text.startswith(symbol, i):
                phones.append(IPA_TO_ARPABET[symbol])
                i += len(symbol)
                break
        else:
            if text[i] in _IGNORED or unicodedata.combining(text[i]):
                i += 1
                continue
            return None
    return " ".join(phones) or None


def espeak_pronunciations(words: Sequence[str]) -> dict[str, Optional[str]]:
    """``{word: ARPAbet phones or None}`` for ``words`` (lowercase dictionary forms, :func:`~aligner._forced.
    normalise_words`), from one ``espeak-ng`` call for those not seen before in this process. None for every word when
    espeak-ng is not installed or fails (logged), and for a word whose IPA does not map (:func:`ipa_to_arpabet`)."""
    global _warned_missing
    wanted = [w for w in dict.fromkeys(words) if w not in _CACHE]
    if wanted:
        binary = shutil.which("espeak-ng")
        lines: Optional[list[str]] = None
        if binary is None:
            if not _warned_missing:
                logger.info("espeak-ng is not installed: words missing from the dictionary are left out of forced "
                            "alignment (apt-get install espeak-ng gives them a pronunciation)")
                _warned_missing = True
        else:
            try:
                # One word per line: espeak-ng answers one line per input line (a clause each).
                done = subprocess.run([binary, "-q", "--ipa", "-v", "en-us"], input="\n".join(wanted),
                                      capture_output=True, text=True, timeout=_TIMEOUT_SECONDS, check=False)
                lines = done.stdout.splitlines() if done.returncode == 0 else None
                if lines is None:
                    logger.warning("espeak-ng failed (exit %s): %s", done.returncode, done.stderr.strip()[:200])
            except (OSError, subprocess.TimeoutExpired) as error:
                logger.warning("espeak-ng could not run: %s", error)
        if lines is not None and len(lines) != len(wanted):
            logger.warning("espeak-ng gave %d lines for %d words; their pronunciations are not used", len(lines),
                           len(wanted))
            lines = None
        for j, word in enumerate(wanted):
            _CACHE[word] = ipa_to_arpabet(lines[j]) if lines is not None else None
    return {w: _CACHE[w] for w in words}
