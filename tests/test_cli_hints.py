"""CLI hints (adv43 F13, F15): each test runs the command as a user would and checks the words it prints."""
from __future__ import annotations

import json
import os

from avalign.cli import main
from tests.conftest import REPO


def test_demo_outside_the_checkout_finds_the_checkouts_sample_data(tmp_path, monkeypatch, capsys):
    # Before: run anywhere but the repository root, `avalign demo` said "no shards under 'sample_data/shards': run
    # `make sample-data` first" although the sample data exists.
    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    shards = sorted(os.listdir(REPO / "sample_data" / "shards"))
    assert summary["shards"] == len([s for s in shards if s.endswith(".tar")])


def test_demo_with_a_folder_without_shards_names_it_and_data(tmp_path, capsys):
    assert main(["demo", "--data", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (f"avalign demo: error: no shards under {str(tmp_path / 'shards')!r}: pass --data DIR, the "
                           "sample_data folder of the avalign checkout (it holds shards/ and truth.json); if it has no "
                           "shards/, run `make sample-data` in the checkout")
