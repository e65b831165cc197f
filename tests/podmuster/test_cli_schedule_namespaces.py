"""``podmuster schedule`` reads Namespaces from a ``kubectl get ... -o yaml`` List (docs/cli.md).

Why: a pod affinity term's ``namespaceSelector`` matches namespaces by their labels, and
offline those labels come only from the Namespace objects in the input. Here a pending
pod is anti-affine to ``app=db`` pods in namespaces labelled ``env=prod``; the only such
pod runs on n0. With the Namespace read, the pod goes to n1; with no Namespace object,
nothing is labelled ``env=prod`` and the pod goes to n0 (first by name), so the test
tells the two apart. A selector on ``kubernetes.io/metadata.name`` works without any
Namespace object, as the API server sets that label on every namespace.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from crds.names import NAMESPACE_NAME_LABEL
from crds.topology import HOSTNAME_LABEL
from podmuster.cli import main
from tests.kits.volumes import host
from tests.kits.worlds import flatten, job, queue

PROD = {
    "apiVersion": "v1",
    "kind": "Namespace",
    "metadata": {"name": "prod", "labels": {"env": "prod"}},
}


def _away_from_db(namespace_selector: dict[str, Any]) -> dict[str, Any]:
    term = {
        "labelSelector": {"matchLabels": {"app": "db"}},
        "namespaceSelector": namespace_selector,
        "topologyKey": HOSTNAME_LABEL,
    }
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def _placed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], selector: dict[str, Any], *extra: Any
) -> dict[str, str]:
    objects = flatten(
        [
            queue("q"),
            host("n0"),
            host("n1"),
            job(
                "db", "q", namespace="prod", labels={"app": "db"}, states=["Running"], nodes=["n0"]
            ),
            job("web", "q", affinity=_away_from_db(selector)),
            *extra,
        ]
    )
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}))
    assert main(["schedule", str(path), "-o", "json"]) == 0
    captured = capsys.readouterr()
    assert "ignoring" not in captured.err  # Namespace is a kind podmuster reads
    return {b["pod"]: b["node"] for b in json.loads(captured.out)["binds"]}


def test_a_namespace_selector_sees_the_labels_of_the_input_namespaces(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    selector = {"matchLabels": {"env": "prod"}}
    assert _placed(tmp_path, capsys, selector, PROD) == {"default/web-0": "n1"}
    assert _placed(tmp_path, capsys, selector) == {"default/web-0": "n0"}


def test_the_name_label_needs_no_namespace_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    selector = {"matchLabels": {NAMESPACE_NAME_LABEL: "prod"}}
    assert _placed(tmp_path, capsys, selector) == {"default/web-0": "n1"}
