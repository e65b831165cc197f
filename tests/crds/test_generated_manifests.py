"""The committed CRD manifests are exactly what ``make crds`` writes from the models.

Both copies are checked: ``crds/*.yaml`` and the chart's ``charts/podmuster/crds/``.
A field added to a model (or a constraint, or a docstring) without ``make crds``
fails here, and so does a hand edit of a manifest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from crds import generate, podgroup, queue

TARGETS = generate.targets()


@pytest.mark.parametrize("path", sorted(TARGETS), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_committed_manifest_is_the_generated_one(path: Path) -> None:
    assert path.read_text(encoding="utf-8") == TARGETS[path], "run make crds"


def test_every_kai_kind_and_no_other_manifest() -> None:
    for folder in {path.parent for path in TARGETS}:
        assert sorted(p.name for p in folder.glob("*.yaml")) == sorted(
            p.name for p in TARGETS if p.parent == folder
        )


def _schema(kind: str) -> dict[str, Any]:
    (spec,) = [s for s in generate.CRDS if s.kind == kind]
    version = generate.manifest(spec)["spec"]["versions"][0]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


def test_model_facts_reach_the_schema() -> None:
    """Guard the generator: constraints, docstrings and quantities come from the models."""
    spec = _schema("PodGroup")["properties"]["spec"]["properties"]
    assert spec["minMember"] == {
        "description": podgroup.PodGroupSpec.model_fields["min_member"].description,
        "type": "integer",
        "format": "int32",
        "minimum": 0,
    }
    assert spec["preemptibility"]["enum"] == ["preemptible", "non-preemptible"]
    gpu = _schema("Queue")["properties"]["spec"]["properties"]["resources"]["properties"]["gpu"]
    assert gpu["properties"]["limit"]["minimum"] == queue.UNLIMITED
    assert gpu["properties"]["overQuotaWeight"]["minimum"] == 0
    allocated = _schema("Queue")["properties"]["status"]["properties"]["allocated"]
    assert allocated["additionalProperties"]["x-kubernetes-int-or-string"] is True


def test_generated_text_is_valid_yaml_with_one_crd() -> None:
    for text in set(TARGETS.values()):
        (crd,) = [d for d in yaml.safe_load_all(text) if d]
        assert crd["kind"] == "CustomResourceDefinition"


def test_check_mode_names_a_stale_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = {tmp_path / "crds" / "x.yaml": "new\n"}
    (tmp_path / "crds").mkdir()
    (tmp_path / "crds" / "x.yaml").write_text("old\n")
    monkeypatch.setattr(generate, "ROOT", tmp_path)
    monkeypatch.setattr(generate, "targets", lambda: fake)
    assert generate.main(["--check"]) == 1
    assert capsys.readouterr().out.strip() == "crds/x.yaml: differs from the models (run make crds)"
    assert generate.main([]) == 0
    assert (tmp_path / "crds" / "x.yaml").read_text() == "new\n"
    assert generate.main(["--check"]) == 0
