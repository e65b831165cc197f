"""``podmuster schedule`` reads DRA objects and prints the devices it chose (docs/cli.md, dra.md).

Without them read, the pod would go to n0 (first by name); the only device is on n1.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from podmuster.cli import main
from tests.kits.dra import GPU_DRIVER, claim, device_class, dra_job, resource_slice
from tests.kits.volumes import host
from tests.kits.worlds import flatten, queue


def test_schedule_prints_the_chosen_devices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objects = flatten(
        [queue("q"), host("n0"), host("n1"), device_class(), resource_slice("n1", "gpu-0"),
         claim("c"), *dra_job("j", "q", ["c"])]
    )  # fmt: skip
    path = tmp_path / "snap.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    assert main(["schedule", str(path)]) == 0
    captured = capsys.readouterr()
    (bind,) = yaml.safe_load(captured.out)["binds"]
    assert (bind["pod"], bind["node"]) == ("default/j-0", "n1")
    (entry,) = bind["resourceClaims"]
    assert entry["name"] == "c0"
    assert entry["allocation"]["devices"]["results"] == [
        {"request": "gpu", "driver": GPU_DRIVER, "pool": "n1", "device": "gpu-0"}
    ]
    assert "ignoring" not in captured.err
