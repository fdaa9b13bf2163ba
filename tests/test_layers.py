"""Imports run one way: the import-linter contracts in ``setup.cfg`` hold (``lint-imports``).

Layers, bottom to top: ``avcore`` (records, time rules, errors, resampling); ``loaders``' readers and
``aligner`` beside each other on it; ``loaders.pipeline`` above both; ``avalign`` (the CLI tools) on top.
"""
from __future__ import annotations

import ast
import configparser
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _config() -> configparser.ConfigParser:
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    return config


def test_setup_cfg_declares_the_layer_contracts():
    config = _config()
    contracts = {section.split(":", 2)[2] for section in config.sections() if section.startswith("importlinter:contract:")}
    assert {"layers", "readers", "aligner", "avcore", "synth"} <= contracts
    assert config["importlinter:contract:layers"]["layers"].split() == ["avalign", "loaders", "aligner", "avcore"]


def test_every_loaders_module_is_a_reader_or_in_the_pipeline():
    """A new module directly under ``loaders/`` is a reader and must be listed in the readers contract;
    the training pipeline goes in ``loaders/pipeline/``."""
    listed = set(_config()["importlinter:contract:readers"]["source_modules"].split())
    present = {f"loaders.{path.stem}" for path in (REPO / "loaders").glob("*.py") if path.stem != "__init__"}
    assert present == listed, f"not in the readers contract: {sorted(present - listed)}; gone: {sorted(listed - present)}"


def test_import_contracts_hold(tmp_path):
    if not LINT_IMPORTS.exists():
        pytest.fail(f"{LINT_IMPORTS} not found: install import-linter (pinned in requirements.lock)")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([str(LINT_IMPORTS), "--no-cache", str(REPO / "setup.cfg")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, f"an import breaks the layering:\n{proc.stdout}\n{proc.stderr}"
    kept = re.search(r"Contracts: (\d+) kept, 0 broken", proc.stdout)
    assert kept is not None and int(kept.group(1)) >= 5, proc.stdout


def test_one_shot_soxr_resampling_has_one_owner():
    """``avcore._resample`` is the only library module calling ``soxr.resample`` (readers and aligner use it);
    the generators in ``avalign.synth`` keep their own (they write the tests' ground truth)."""
    callers = sorted(str(path.relative_to(REPO)) for package in ("avcore", "aligner", "loaders")
                     for path in (REPO / package).rglob("*.py") if "soxr.resample(" in path.read_text())
    assert callers == ["avcore/_resample.py"]


# ------------------------------------------------------------------ public names only outside a package

PRIVATE_IMPORT_ALLOWED: tuple[str, ...] = ()
"""Imports of underscore modules allowed outside their package: none (every package's internals are reached through
its public names or an explicit public submodule such as ``aligner.estimators`` or ``loaders.pipeline``)."""

_CHECKED_TREES = ("avcore", "aligner", "loaders", "avalign", "scripts", "tests")


def _owning_package(module: str) -> str:
    """``loaders.pipeline._pack.x`` → ``loaders.pipeline``: the package an underscore module belongs to, or ''."""
    parts = module.split(".")
    private = next((i for i, part in enumerate(parts) if part.startswith("_") and not part.startswith("__")), None)
    return "" if private is None else ".".join(parts[:private])


def private_imports(source: str, *, importer: str) -> list[tuple[int, str]]:
    """``(line, module)`` of every import, in ``source`` (the code of module ``importer``), of an underscore module
    of a package that ``importer`` is not inside (``loaders._shards`` from ``avalign.preprocess._inputs``).

    Inside a package its private modules are free to use each other (``loaders.pipeline._items`` may import
    ``loaders._video``); from outside only public names: the package's ``__init__`` or a public submodule.
    """
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            continue
        for module in modules:
            owner = _owning_package(module)
            if owner and owner.split(".")[0] in _CHECKED_TREES[:4] and not f"{importer}.".startswith(f"{owner}."):
                found.append((node.lineno, module))
                break
    return found


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_private_import_rule_catches_what_it_should():
    """The checker can fail: each of these is flagged (and the allowed ones are not)."""
    flagged = [
        ("from loaders._shards import shard_samples", "avalign.preprocess._inputs"),
        ("import loaders._video as video", "tests.test_video"),
        ("from loaders.pipeline._pack import plan_packs", "scripts.bench_pack"),
        ("from loaders.pipeline import _pack", "tests.test_pack"),
        ("from avalign.report._cli import add_parser", "avalign.cli"),
        ("from avcore._errors import SampleError", "loaders.errors"),
    ]
    assert private_imports(flagged[0][0], importer=flagged[0][1]) == [(1, "loaders._shards")]
    for source, importer in flagged[1:]:
        assert private_imports(source, importer=importer), (source, importer)
    allowed = [
        ("from loaders._audio import read_audio", "loaders"),  # a package's __init__ re-exports its own modules
        ("from loaders._video import read_video", "loaders.pipeline._items"),  # a subpackage uses its parent's
        ("from avalign._measure import measure", "avalign.report._collect"),
        ("from loaders.pipeline import plan_packs", "scripts.bench_pack"),
        ("from loaders.shards import shard_samples", "tests.test_shards"),
        ("import loaders.media", "tests.test_index"),
    ]
    for source, importer in allowed:
        assert private_imports(source, importer=importer) == [], (source, importer)


def test_outside_a_package_only_its_public_names_are_imported():
    """No module imports an underscore module of another package (``from loaders._shards import …`` in
    ``avalign/`` or ``tests/``): the package's ``__init__`` or a public submodule (``loaders.shards``,
    ``loaders.media``, ``loaders.pipeline``, ``avalign.report`` …) instead."""
    offenders = []
    for tree in _CHECKED_TREES:
        for path in sorted((REPO / tree).rglob("*.py")):
            for line, module in private_imports(path.read_text(), importer=_module_name(path)):
                if not module.startswith(PRIVATE_IMPORT_ALLOWED):
                    offenders.append(f"{path.relative_to(REPO)}:{line}: {module}")
    assert offenders == [], "imports of another package's private modules:\n" + "\n".join(offenders)


def test_the_measure_flow_has_one_owner():
    """decode → audio-only / video-only fallback → measure → null the unmeasurable fields: composed once, in
    ``avalign.measure_media``; ``measure``, ``preprocess`` and ``report`` call it (the report's clip page only
    re-decodes, with the same decode rule)."""
    def callers(name: str) -> set[str]:
        return {str(path.relative_to(REPO)) for path in (REPO / "avalign").rglob("*.py")
                if f"{name}(" in path.read_text() and path.name != "_measure.py"}

    assert callers("null_unmeasurable") == set() and callers("measure_aligned") == set()
    assert callers("decode_for_measure") == {"avalign/report/_clip_view.py"}
    assert {"avalign/preprocess/_sample.py", "avalign/report/_collect.py"} <= callers("measure_media")


def test_no_bare_string_literals():
    """A string statement is a docstring (first in a module, class or function) or documents the assignment just
    before it; anything else is a string attached to nothing (dead text a reader takes for documentation)."""
    found = []
    for tree_name in _CHECKED_TREES:
        for path in sorted((REPO / tree_name).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                body = getattr(node, "body", None)
                if not isinstance(body, list):
                    continue
                for i, statement in enumerate(body):
                    if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
                            and isinstance(statement.value.value, str)):
                        continue
                    docstring = i == 0 and isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                    if not docstring and not (i and isinstance(body[i - 1], (ast.Assign, ast.AnnAssign))):
                        found.append(f"{path.relative_to(REPO)}:{statement.lineno}")
    assert found == [], f"string literals attached to nothing: {found}"


def test_loaders_top_level_is_the_contract():
    """``loaders`` exports DESIGN.md's contract, the stages a webdataset user composes, and avcore's records and
    errors; nothing else (the pipeline's parts are in ``loaders.pipeline``, shard/media/transcript helpers in
    ``loaders.shards`` / ``loaders.media`` / ``loaders.transcripts``)."""
    import avcore
    import loaders

    contract = {"read_video", "read_audio", "read_transcript", "probe_video", "plan_packs", "make_dataset",
                "make_loader", "PackedBatch", "decode_items", "pack_batches"}
    records = {"AudioClip", "BatchItem", "Span", "TextTokens", "Transcript", "VideoClip", "VideoMetadata", "Word"}
    errors = {"DecodeError", "DecodeTimeout", "REASONS", "SampleError", "ShardError", "TranscriptError", "reason_of",
              "sample_error"}
    assert set(loaders.__all__) == contract | records | errors and loaders.__all__ == sorted(loaders.__all__)
    assert all(getattr(loaders, name) is getattr(avcore, name) for name in records | errors)


def test_media_extension_lists_have_one_owner():
    """Which members are media, transcripts and captions is listed once (``avcore._media_types``); the loader,
    preprocess, report and demo import those lists. (The generators in ``avalign.synth`` list the containers
    they write, not what the readers accept; ``read_transcript``'s format names are another list: formats.)"""
    owners = set()
    for tree_name in ("avcore", "aligner", "loaders", "avalign"):
        for path in sorted((REPO / tree_name).rglob("*.py")):
            if "synth" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                    values = {e.value for e in node.elts if isinstance(e, ast.Constant)}
                    if ({"mkv", "webm"} <= values or {"flac", "wav"} <= values or {"transcript.json", "srt"} <= values
                            or {"txt", "caption"} <= values):
                        owners.add(str(path.relative_to(REPO)))
    assert owners == {"avcore/_media_types.py"}, owners
