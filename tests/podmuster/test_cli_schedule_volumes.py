"""``podmuster schedule`` reads claims, PVs and StorageClasses (docs/cli.md, semantics §13).

Without them read, the pod would go to n0 (first by name); its claim's only PV lives on n1.
A broken PV is one stderr line and exit 2, the rest still decided.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from podmuster.cli import main
from tests.kits.volumes import host, pv, pvc, storage_class, volume_job
from tests.kits.worlds import flatten, queue


def _snapshot(tmp_path: Path, *extra: dict[str, object]) -> str:
    objects = flatten(
        [queue("q"), host("n0"), host("n1"), storage_class("local"), pv("pv1", node="n1"),
         pvc("data"), *volume_job("j", "q", ["data"]), *extra]
    )  # fmt: skip
    path = tmp_path / "snap.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    return str(path)


def test_schedule_places_the_pod_where_its_volume_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["schedule", _snapshot(tmp_path)]) == 0
    captured = capsys.readouterr()
    out = yaml.safe_load(captured.out)
    assert [(b["pod"], b["node"]) for b in out["binds"]] == [("default/j-0", "n1")]
    assert "ignoring" not in captured.err


def test_a_broken_pv_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = pv("bad", node="n0")
    broken["spec"]["capacity"]["storage"] = "lots"
    assert main(["schedule", _snapshot(tmp_path, broken)]) == 2
    err = capsys.readouterr().err
    assert "bad" in err
    assert "spec.capacity.storage" in err
