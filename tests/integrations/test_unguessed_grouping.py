"""Workloads podmuster used to guess about silently: each is grouped right, or warned about.

Covers (issue 16, item 5), on hand-written manifests under ``fixtures/`` with the
expected PodGroups worked out by hand from KAI's rules and the frameworks' docs:
a kind with no adapter and no pod template (default grouping + a warning).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from integrations import templates
from integrations.grouping import GroupingResult, group_workloads

Fixture = Callable[[str], list[dict[str, Any]]]


def pg_name(api_version: str, kind: str, name: str, namespace: str = "default") -> str:
    return f"pg-{name}-{templates.stable_uid(api_version, kind, namespace, name)}"


def summary(result: GroupingResult) -> dict[str, tuple[Any, ...]]:
    """name → (minMember, ((subgroup, min), ...), queue, priority) per PodGroup."""
    return {
        pg["metadata"]["name"]: (
            pg["spec"].get("minMember"),
            tuple((s["name"], s.get("minMember")) for s in pg["spec"].get("subGroups", [])),
            pg["spec"]["queue"],
            pg["spec"]["priorityClassName"],
        )
        for pg in result.pod_groups
    }


def test_unknown_kind_without_pods_is_shown_with_a_warning(fixture: Fixture) -> None:
    result = group_workloads(fixture("unknown-kind.yaml"))
    assert result.errors == ()
    name = pg_name("example.com/v1", "Simulation", "wind-tunnel", "research")
    assert summary(result) == {name: (1, (), "default-queue", "train")}
    [warning] = result.warnings
    assert warning.object == "Simulation research/wind-tunnel"
    assert "does not know which pods Simulation creates" in warning.message


def test_known_kinds_give_no_warning(fixture: Fixture) -> None:
    result = group_workloads(fixture("spark-app.yaml"))
    assert result.warnings == ()
