"""Namespaces as the cache reads them and as namespace selectors see them.

Why: a pod affinity term's ``namespaceSelector`` matches Namespaces by their labels,
so those labels must reach the snapshot from offline input as from a live watch. A
Namespace the input lacks still answers to ``kubernetes.io/metadata.name``, which the
API server puts on every namespace. A bad Namespace is one named error that never
stops the others, and a bad replacement must not leave the old labels behind (a
selector would then match what the cluster no longer says).
"""

from __future__ import annotations

from typing import Any

import pytest

from crds.errors import InputError
from crds.names import NAMESPACE_NAME_LABEL
from scheduler.api.namespaces import namespace_labels
from scheduler.cache.cluster_cache import ClusterCache
from tests.kits.worlds import sourced


def _namespace(name: str, labels: Any = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if labels is not None:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


def test_the_name_label_is_always_there() -> None:
    known = {"red": {"team": "red"}, "blue": {NAMESPACE_NAME_LABEL: "blue", "team": "blue"}}
    assert namespace_labels(known, "absent") == {NAMESPACE_NAME_LABEL: "absent"}
    assert namespace_labels(known, "red") == {"team": "red", NAMESPACE_NAME_LABEL: "red"}
    assert namespace_labels(known, "blue") == {NAMESPACE_NAME_LABEL: "blue", "team": "blue"}
    assert namespace_labels({"x": {NAMESPACE_NAME_LABEL: "y"}}, "x") == {NAMESPACE_NAME_LABEL: "x"}
    assert known["red"] == {"team": "red"}  # the snapshot's map is not changed


def test_namespaces_reach_the_snapshot_and_leave_it_when_deleted() -> None:
    cache = ClusterCache()
    cache.upsert_all(sourced([_namespace("red", {"team": "red"}), _namespace("bare")]))
    assert cache.snapshot().snapshot.namespace_labels == {"red": {"team": "red"}, "bare": {}}
    cache.upsert_all(sourced([_namespace("red", {"team": "red", "tier": "gold"})]))
    assert cache.snapshot().snapshot.namespace_labels["red"] == {"team": "red", "tier": "gold"}
    cache.delete("Namespace", "red")
    assert cache.snapshot().snapshot.namespace_labels == {"bare": {}}


@pytest.mark.parametrize(
    ("labels", "field", "message"),
    [
        ({"team": 7}, "metadata.labels[team]", "expected a string, got 7"),
        (["team=red"], "metadata.labels", "expected a map of strings"),
    ],
)
def test_a_bad_namespace_is_named_and_the_others_are_served(
    labels: Any, field: str, message: str
) -> None:
    cache = ClusterCache(strict=False)
    cache.upsert_all(sourced([_namespace("broken", {"team": "red"}), _namespace("fine", {})]))
    cache.upsert_all(sourced([_namespace("broken", labels)]))
    result = cache.snapshot()
    assert result.snapshot.namespace_labels == {"fine": {}}  # the old labels are gone too
    (error,) = result.errors
    assert str(error).startswith(f"scenario: Namespace broken: {field}: {message}"), str(error)
    cache.upsert_all(sourced([_namespace("broken", {"team": "blue"})]))
    result = cache.snapshot()
    assert result.errors == []
    assert result.snapshot.namespace_labels["broken"] == {"team": "blue"}


def test_strict_reading_raises_on_a_bad_namespace() -> None:
    with pytest.raises(InputError, match=r"Namespace broken: metadata\.labels\[a\]"):
        ClusterCache().upsert_all(sourced([_namespace("broken", {"a": 1})]))
