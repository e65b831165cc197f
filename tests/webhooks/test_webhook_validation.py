"""The admission rules for PodGroups and Queues, fed bad objects directly."""

from __future__ import annotations

from typing import Any

import pytest

from webhooks.validation import validate_podgroup, validate_queue


def podgroup(subgroups: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"minMember": 1, "queue": "team-a", **spec}
    if subgroups is not None:
        body["subGroups"] = subgroups
    return {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": body,
    }


def messages(problems: list[Any]) -> list[str]:
    return [str(p) for p in problems]


def test_a_plain_podgroup_is_accepted() -> None:
    assert validate_podgroup(podgroup()) == []
    assert validate_podgroup(podgroup(minMember=None)) == []


def test_a_subgroup_tree_is_accepted() -> None:
    tree = [
        {"name": "workers"},
        {"name": "rack-0", "parent": "workers", "minMember": 4},
        {"name": "rack-1", "parent": "workers", "minMember": 4},
        {"name": "head", "minMember": 1},
    ]
    assert validate_podgroup(podgroup(tree)) == []


def test_duplicate_subgroup_names_name_both_places() -> None:
    problems = messages(validate_podgroup(podgroup([{"name": "a"}, {"name": "b"}, {"name": "a"}])))
    assert problems == [
        "PodGroup ml/train: spec.subGroups[2].name: duplicate subgroup name 'a'"
        " (also spec.subGroups[0])"
    ]


def test_subgroup_names_are_dns_labels_on_create() -> None:
    """KAI v0.17's CRD pattern, checked by the webhook (reading does not: a PodGroup stored
    under an earlier CRD is still scheduled)."""
    tree = [{"name": "Workers", "minSubGroup": 1}, {"name": "w", "parent": "Workers"}]
    assert messages(validate_podgroup(podgroup(tree))) == [
        "PodGroup ml/train: spec.subGroups[0].name: must be a DNS label (lower case letters,"
        " digits and '-'), got 'Workers'",
        "PodGroup ml/train: spec.subGroups[1].parent: must be a DNS label (lower case letters,"
        " digits and '-'), got 'Workers'",
    ]


def test_a_missing_parent_is_named() -> None:
    problems = messages(validate_podgroup(podgroup([{"name": "a", "parent": "nope"}])))
    assert problems == ["PodGroup ml/train: spec.subGroups[0].parent: no subgroup named 'nope'"]


def test_a_cycle_is_reported_once_with_its_path() -> None:
    tree = [
        {"name": "a", "parent": "c"},
        {"name": "b", "parent": "a"},
        {"name": "c", "parent": "b"},
        {"name": "d", "parent": "a"},
    ]
    problems = messages(validate_podgroup(podgroup(tree)))
    assert problems == [
        "PodGroup ml/train: spec.subGroups[0].parent: subgroup parents form a cycle: a -> c -> b -> a"
    ]


def test_a_subgroup_that_is_its_own_parent() -> None:
    problems = messages(validate_podgroup(podgroup([{"name": "a", "parent": "a"}])))
    assert problems == [
        "PodGroup ml/train: spec.subGroups[0].parent: subgroup parents form a cycle: a -> a"
    ]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (-1, "Input should be greater than or equal to 0, got -1"),
        (1.5, "Input should be a valid integer, got 1.5"),
        ("2", "Input should be a valid integer, got '2'"),
        (True, "Input should be a valid integer, got true"),  # YAML's word, not Python's
        (3_000_000_000, "3000000000 does not fit in a 32-bit integer"),  # the value once
    ],
)
def test_min_member_must_be_a_positive_integer(value: Any, message: str) -> None:
    problems = messages(validate_podgroup(podgroup(minMember=value)))
    assert problems == [f"PodGroup ml/train: spec.minMember: {message}"]
    problems = messages(validate_podgroup(podgroup([{"name": "a", "minMember": value}])))
    assert problems[0].startswith("PodGroup ml/train: spec.subGroups[0].minMember:")


def test_error_lines_use_yaml_words_and_show_the_value_once() -> None:
    """No Python (None, True) or class names (PodGroupSpec); no value said twice."""
    body = podgroup()
    body["spec"] = None
    assert messages(validate_podgroup(body)) == [
        "PodGroup ml/train: spec: expected a map, got null"
    ]
    assert messages(validate_podgroup(podgroup(stalenessGracePeriod="soon"))) == [
        "PodGroup ml/train: spec.stalenessGracePeriod: invalid duration 'soon'"
    ]
    assert messages(validate_podgroup(podgroup(queue=False))) == [
        "PodGroup ml/train: spec.queue: Input should be a valid string, got false"
    ]


def test_malformed_subgroups() -> None:
    assert messages(validate_podgroup(podgroup(subGroups={"a": 1}))) == [
        "PodGroup ml/train: spec.subGroups: Input should be a valid list, got {'a': 1}"
    ]
    assert messages(validate_podgroup(podgroup([{"minMember": 1}]))) == [
        "PodGroup ml/train: spec.subGroups[0].name: Field required"
    ]
    assert messages(validate_podgroup(podgroup(minMemeber=3))) == [
        "PodGroup ml/train: spec.minMemeber: unknown field, got 3"
    ]


def queue(name: str, parent: str = "", resources: Any = "default", **spec: Any) -> dict[str, Any]:
    if resources == "default":
        unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
        resources = {"gpu": unlimited, "cpu": unlimited, "memory": unlimited}
    body: dict[str, Any] = {**spec}
    if resources is not None:
        body["resources"] = resources
    if parent:
        body["parentQueue"] = parent
    return {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": body,
    }


def tree(*queues: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {q["metadata"]["name"]: q for q in queues}


def test_a_queue_under_an_existing_parent_is_accepted() -> None:
    existing = tree(queue("research"))
    assert validate_queue(queue("vision", "research"), existing) == []
    assert validate_queue(queue("research"), existing) == []


def test_a_queue_without_resources_is_rejected() -> None:
    assert messages(validate_queue(queue("q", resources=None), {})) == [
        "Queue q: spec.resources: required (gpu, cpu and memory quotas)"
    ]


def test_a_missing_parent_is_rejected() -> None:
    assert messages(validate_queue(queue("q", "ghost"), {})) == [
        "Queue q: spec.parentQueue: no Queue named 'ghost'"
    ]
    assert messages(validate_queue(queue("q", "q"), tree(queue("q")))) == [
        "Queue q: spec.parentQueue: a queue cannot be its own parent"
    ]


def test_an_update_that_closes_a_loop_is_rejected() -> None:
    existing = tree(queue("org"), queue("dept", "org"), queue("team", "dept"))
    problems = messages(validate_queue(queue("org", "team"), existing))
    assert problems == [
        "Queue org: spec.parentQueue: parent queues would form a cycle: org -> team -> dept -> org"
    ]


def test_an_existing_loop_elsewhere_does_not_block_an_unrelated_queue() -> None:
    existing = tree(queue("x", "y"), queue("y", "x"), queue("root"))
    assert validate_queue(queue("leaf", "root"), existing) == []


@pytest.mark.parametrize(
    ("resource", "key", "value", "message"),
    [
        ("gpu", "quota", -2, "Input should be greater than or equal to -1, got -2"),
        ("cpu", "limit", -5, "Input should be greater than or equal to -1, got -5"),
        ("memory", "limit", -1000, "Input should be greater than or equal to -1, got -1000"),
        ("gpu", "quota", -0.5, "must be -1 (unlimited) or >= 0, got -0.5"),
        ("gpu", "overQuotaWeight", -1, "Input should be greater than or equal to 0, got -1"),
        ("gpu", "overQuotaWieght", 1, "unknown field, got 1"),
        (
            "memory",
            "quota",
            "16Gi",
            "Input should be a valid number, got '16Gi'",  # not once per member of int | float
        ),
        (
            "gpu",
            "limit",
            True,
            "Input should be a valid number, got true",
        ),
    ],
)
def test_bad_numbers_name_the_field(resource: str, key: str, value: Any, message: str) -> None:
    ok = {"quota": 0, "limit": -1, "overQuotaWeight": 1}
    resources = {"gpu": dict(ok), "cpu": dict(ok), "memory": dict(ok)}
    resources[resource][key] = value
    assert messages(validate_queue(queue("q", resources=resources), {})) == [
        f"Queue q: spec.resources.{resource}.{key}: {message}"
    ]


def test_a_partial_resource_list_is_accepted() -> None:
    """A CPU-only queue: a missing gpu means a limit of zero GPUs, which is legitimate."""
    resources = {"cpu": {"quota": 4000, "limit": 8000, "overQuotaWeight": 1}}
    assert validate_queue(queue("cpu-only", resources=resources), {}) == []
    assert messages(validate_queue(queue("q", resources={"gpu": 3}), {})) == [
        "Queue q: spec.resources.gpu: expected a map, got 3"
    ]
