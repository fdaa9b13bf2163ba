"""Imports run one way: the import-linter contracts in ``setup.cfg`` hold (``lint-imports``).

Layers, bottom to top: ``avcore`` (records, time rules, errors, resampling); ``loaders``' readers and
``aligner`` beside each other on it; ``loaders.pipeline`` above both; ``avalign`` (the CLI tools) on top.
"""
from __future__ import annotations

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
