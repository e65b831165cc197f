"""``$KUBECONFIG`` path lists merged as kubectl does: missing files skipped, the first
current-context and the first entry of each name win, relative paths resolved against
the file holding them, an unreadable file named."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from kubeapi import credentials


def write(path: Path, config: dict[str, object]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config))
    return str(path)


def two_files(tmp_path: Path) -> list[str]:
    first = write(
        tmp_path / "a" / "config",
        {
            "contexts": [{"name": "dev", "context": {"cluster": "c", "user": "u"}}],
            "users": [{"name": "u", "user": {"tokenFile": "tok"}}],
        },
    )
    second = write(
        tmp_path / "b" / "config",
        {
            "current-context": "dev",
            "contexts": [
                {"name": "dev", "context": {"cluster": "other", "user": "other"}},
                {"name": "prod", "context": {"cluster": "c", "user": "v"}},
            ],
            "clusters": [
                {"name": "c", "cluster": {"server": "https://c", "certificate-authority": "ca"}}
            ],
            "users": [
                {"name": "u", "user": {"token": "shadowed"}},
                {"name": "v", "user": {"token": "tv"}},
            ],
        },
    )
    return [str(tmp_path / "missing"), first, second]


def test_first_entry_of_each_name_wins_and_paths_stay_with_their_file(tmp_path: Path) -> None:
    env = {"KUBECONFIG": os.pathsep.join(two_files(tmp_path))}
    dev = credentials.load(environ=env)
    assert dev.server == "https://c"
    assert dev.ca_path == str(tmp_path / "b" / "ca")
    assert dev.token_path == str(tmp_path / "a" / "tok")
    assert dev.token == ""
    prod = credentials.load(context="prod", environ=env)
    assert prod.token == "tv"


def test_an_unreadable_file_of_the_list_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.write_text("a: [unclosed")
    env = {"KUBECONFIG": os.pathsep.join([*two_files(tmp_path), str(bad)])}
    with pytest.raises(credentials.CredentialsError, match=f"kubeconfig {bad}: cannot read"):
        credentials.load(environ=env)


def test_no_existing_file_means_no_context(tmp_path: Path) -> None:
    env = {"KUBECONFIG": os.pathsep.join([str(tmp_path / "x"), str(tmp_path / "y")])}
    with pytest.raises(credentials.CredentialsError, match="no current-context"):
        credentials.load(environ=env)
