"""The spoken form of a written token with digits, for forced alignment (optional ``num2words``).

ASR output (Whisper) and subtitles write numbers as digits and symbols: ``"In 2019, 3 of the 10 paid $1,000 at
3:30pm, 50% more, on the 1st."``. None of those tokens is a pronouncing-dictionary word, so forced alignment could not
place them, and a caption made mostly of them failed. :func:`spoken_form` gives the words a speaker says for one
token (American usage, no "and" inside numbers)::

    1,000 / 12      one thousand / twelve            1st, 3rd     first, third
    2019, 1990s     twenty nineteen, nineteen nineties (years: 4 digits, 1100-2099, no comma)
    1.5             one point five                   25%          twenty five percent
    $1,000, £5, €2  one thousand dollars, five pounds, two euros
    $49.99          forty nine dollars ninety nine
    3:30pm, 18:45   three thirty p m, eighteen forty five          10:05  ten oh five    3:00 three o'clock
    COVID-19        covid nineteen (hyphenated parts, each in turn)

A token it cannot speak (``555-0199`` keeps its digit groups as numbers, ``BA287``, ``7B``, ``info@example.com``)
gives None: the aligner leaves it out, as before. The forced aligner reports the words of such a token as the token
itself (``"$1,000"`` gets the span from "one" to "dollars"), so word texts keep the transcript's writing.
"""
from __future__ import annotations

import logging
import re
from typing import Optional

logger = logging.getLogger(__name__)

__all__ = ["spoken_form", "written_label"]

_CURRENCY = {"$": ("dollar", "dollars"), "£": ("pound", "pounds"), "€": ("euro", "euros")}
_EDGE_PUNCTUATION = "\"'“”‘’«»()[]{}.,!?;:…"
_INTEGER = re.compile(r"\d{1,3}(?:,\d{3})+|\d+")
_NUMBER = re.compile(rf"(?:{_INTEGER.pattern})(?:\.\d+)?")
_ORDINAL = re.compile(r"(\d+)(st|nd|rd|th)")
_DECADE = re.compile(r"(\d{4})'?s")
_MAX_DIGITS = 15
"""A token with more digits than this is no number anyone says (an ID, a hash; num2words overflows past 10**300)."""
_TIME = re.compile(r"(\d{1,2}):(\d{2})\s*([ap])?\.?(?:m\.?)?", re.IGNORECASE)


def written_label(token: str) -> str:
    """``token`` without the punctuation around it, case kept (``"$1,000."`` → ``"$1,000"``, ``"COVID-19,"`` →
    ``"COVID-19"``): the text a word of a token with digits is reported under."""
    return token.strip(_EDGE_PUNCTUATION)


def _words(text: str) -> tuple[str, ...]:
    """num2words output as dictionary words: ``"one hundred and fifty-five"`` → ``("one", "hundred", "fifty", "five")``."""
    return tuple(w for w in re.split(r"[\s,-]+", text) if w and w != "and")


def _cardinal(digits: str) -> tuple[str, ...]:
    from num2words import num2words

    return _words(num2words(int(digits.replace(",", "")), lang="en"))


def _number(text: str, *, years: bool = True) -> Optional[tuple[str, ...]]:
    """A cardinal, a year or a decimal written in digits; None for anything else."""
    from num2words import num2words

    if not _NUMBER.fullmatch(text):
        return None
    whole, _, fraction = text.partition(".")
    if fraction:
        return _cardinal(whole) + ("point",) + tuple(_words(num2words(int(d), lang="en"))[0] for d in fraction)
    if years and "," not in whole and len(whole) == 4 and 1100 <= int(whole) <= 2099 and not 2000 <= int(whole) <= 2009:
        return _words(num2words(int(whole), lang="en", to="year"))
    return _cardinal(whole)


def _time(match: re.Match[str]) -> tuple[str, ...]:
    hours, minutes, half = int(match.group(1)), int(match.group(2)), match.group(3)
    out = _cardinal(str(hours))
    if minutes == 0:
        out += () if half else ("o'clock",)
    elif minutes < 10:
        out += ("oh",) + _cardinal(str(minutes))
    else:
        out += _cardinal(str(minutes))
    return out + ((half.lower(), "m") if half else ())


def spoken_form(token: str) -> Optional[tuple[str, ...]]:
    """The words a speaker says for ``token``, a written token with digits (module docstring), lowercased; None when
    ``token`` has no digit, more than 15, or is not a number, ordinal, year, decimal, percentage, amount of money or time of day
    that this function knows how to say.

    Raises:
        ImportError: num2words is not installed (``pip install num2words``).

    Example:
        >>> spoken_form("$1,000.")
        ('one', 'thousand', 'dollars')
        >>> spoken_form("3:30pm")
        ('three', 'thirty', 'p', 'm')
    """
    text = written_label(token).lower()
    digits = sum(c.isdigit() for c in text)
    if not digits or digits > _MAX_DIGITS:
        return None
    from num2words import num2words

    if text[:1] in _CURRENCY:
        amount = text[1:]
        if not _NUMBER.fullmatch(amount):
            return None
        whole, _, cents = amount.partition(".")
        one, many = _CURRENCY[text[0]]
        out = _cardinal(whole) + ((one,) if int(whole.replace(",", "")) == 1 else (many,))
        return out + (_cardinal(cents) if cents and int(cents) else ())
    if text.endswith("%"):
        number = _number(text[:-1], years=False)
        return None if number is None else number + ("percent",)
    if match := _ORDINAL.fullmatch(text):
        return _words(num2words(int(match.group(1)), lang="en", to="ordinal"))
    if match := _DECADE.fullmatch(text):
        year = _number(match.group(1))
        if year is None or not year[-1].endswith("y"):
            return None
        return year[:-1] + (year[-1][:-1] + "ies",)
    if match := _TIME.fullmatch(text):
        if int(match.group(1)) <= 24 and int(match.group(2)) < 60:
            return _time(match)
        return None
    if "-" in text.strip("-"):
        parts = [p for p in text.split("-") if p]
        if all(p.isdigit() for p in parts):  # phone numbers, ranges, dates: how they are said varies
            return None
        out: tuple[str, ...] = ()
        for part in parts:
            spoken = spoken_form(part) if any(c.isdigit() for c in part) else (re.sub(r"[^\w']", "", part),)
            if spoken is None or not all(spoken):
                return None
            out += spoken
        return out
    return _number(text)
