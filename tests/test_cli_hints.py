"""CLI hints (adv43 F13, F15): each test runs the command as a user would and checks the words it prints."""
from __future__ import annotations

import json
import os

import pytest

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


def _shards(tmp_path, n: int) -> list[str]:
    from tests.corrupt_cases import write_tar

    folder = tmp_path / "in"
    folder.mkdir()
    return [write_tar(folder / f"shard-{i:06d}.tar", [(f"k{i}.txt", b"a caption")]) for i in range(n)]


def test_an_unquoted_shard_glob_gets_a_hint_to_quote_it(tmp_path, capsys):
    # Before: argparse's bare "unrecognized arguments: in/shard-000002.tar ... out".
    shards = _shards(tmp_path, 3)
    with pytest.raises(SystemExit) as info:
        main(["preprocess", *shards, str(tmp_path / "out")])
    assert info.value.code == 2
    err = capsys.readouterr().err
    folder = str(tmp_path / "in")
    # (user68: no longer "Quote it ('in/*.tar')": INPUT expands no glob, so that advice failed when pasted)
    assert (f"avalign preprocess: hint: 3 shard paths were given ({shards[0]}, {shards[1]}, …): a pattern such as "
            f"{folder}/*.tar left unquoted is expanded by the shell into several arguments, and INPUT is one. Pass "
            f"'{folder}/shard-{{000000..000002}}.tar' (the brace pattern of exactly these 3), or their directory "
            f"({folder}); a glob is not expanded, even quoted.") in err


def test_two_expanded_shards_taken_as_input_and_output_say_so(tmp_path, capsys):
    # Before: "output '.../shard-000001.tar' exists and is not a directory; hint: pass a directory path" only.
    shards = _shards(tmp_path, 2)
    assert main(["preprocess", *shards]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (f"avalign preprocess: error: output {shards[1]!r} exists and is not a directory; hint: pass a "
                           "directory path; it is a shard: was a pattern such as dir/*.tar left unquoted, so that the "
                           "shell expanded it into INPUT and OUTPUT_DIR? Pass the shards' directory or a brace "
                           "pattern (e.g. 'dir/shard-{000000..000005}.tar'): a glob is not expanded, even quoted")
