"""Reading pods' inter-pod affinity and topology spread (scheduler.cache.affinity_reading).

Good stanzas become the engine's records (namespaces resolved, matchLabelKeys
folded in with the pod's own values); a bad value is refused naming the field,
as the API server would refuse it; another scheduler's pod with a bad term
keeps its place in the snapshot with the term dropped.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.affinity import PodTerm, SpreadConstraint, WeightedTerm
from scheduler.api.labels import Selector
from scheduler.api.resources import ResourceSpace
from scheduler.cache.affinity_reading import read_pod_affinity, read_spread
from scheduler.cache.parsing import FieldError
from scheduler.cache.reading import read_pod

HOST = "kubernetes.io/hostname"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def _term(**extra: Any) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": HOST, **extra}


def _affinity(stanza: dict[str, Any], kind: str = "podAntiAffinity") -> dict[str, Any]:
    return {"affinity": {kind: stanza}}


def test_required_terms_resolve_the_pod_namespace_and_fold_match_label_keys() -> None:
    spec = _affinity(
        {REQUIRED: [_term(matchLabelKeys=["rev", "absent"], mismatchLabelKeys=["team"])]}
    )
    found = read_pod_affinity(spec, "ns", {"rev": "7", "team": "a"})
    assert found is not None
    (term,) = found.anti_affinity
    assert term == PodTerm(
        Selector((("app", "In", ("db",)), ("rev", "In", ("7",)), ("team", "NotIn", ("a",)))),
        frozenset({"ns"}),
        None,
        HOST,
    )
    assert found.affinity == ()
    assert found.preferred == ()


def test_namespaces_and_namespace_selector_are_kept_as_given() -> None:
    spec = _affinity(
        {REQUIRED: [_term(namespaces=["a", "b"], namespaceSelector={})]}, "podAffinity"
    )
    found = read_pod_affinity(spec, "ns", {})
    assert found is not None
    (term,) = found.affinity
    assert term.namespaces == frozenset({"a", "b"})
    assert term.namespace_selector == Selector(())


def test_preferred_anti_affinity_weighs_negative() -> None:
    spec = {
        "affinity": {
            "podAffinity": {PREFERRED: [{"weight": 30, "podAffinityTerm": _term()}]},
            "podAntiAffinity": {PREFERRED: [{"weight": 20, "podAffinityTerm": _term()}]},
        }
    }
    found = read_pod_affinity(spec, "ns", {})
    assert found is not None
    assert [w.weight for w in found.preferred] == [30, -20]
    assert isinstance(found.preferred[0], WeightedTerm)


def test_a_pod_without_pod_affinity_has_none() -> None:
    assert read_pod_affinity({}, "ns", {}) is None
    assert read_pod_affinity({"affinity": {"nodeAffinity": {}}}, "ns", {}) is None
    assert read_pod_affinity(_affinity({REQUIRED: []}), "ns", {}) is None


def test_null_label_selector_is_kept_as_matching_nothing() -> None:
    found = read_pod_affinity(_affinity({REQUIRED: [{"topologyKey": HOST}]}), "ns", {})
    assert found is not None
    assert found.anti_affinity[0].selector is None
    assert not found.anti_affinity[0].matches("ns", {"app": "db"}, lambda _: {})


def test_spread_defaults_and_policies() -> None:
    spec = {
        "topologySpreadConstraints": [
            {
                "maxSkew": 2,
                "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}},
                "matchLabelKeys": ["pod-template-hash"],
                "minDomains": 3,
                "nodeTaintsPolicy": "Honor",
            },
            {"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "ScheduleAnyway"},
        ]
    }
    hard, soft = read_spread(spec, {"pod-template-hash": "abc"})
    assert hard == SpreadConstraint(
        max_skew=2,
        topology_key="zone",
        hard=True,
        selector=Selector((("app", "In", ("web",)), ("pod-template-hash", "In", ("abc",)))),
        min_domains=3,
        honor_node_affinity=True,
        honor_taints=True,
    )
    assert not soft.hard
    assert soft.selector is None
    assert soft.min_domains == 1
    assert not soft.honor_taints
    assert soft.honor_node_affinity


BAD_AFFINITY = [
    (
        _affinity({REQUIRED: [{"labelSelector": {}}]}),
        f"spec.affinity.podAntiAffinity.{REQUIRED}[0].topologyKey",
    ),
    (
        _affinity({REQUIRED: [_term(labelSelector={"matchExpressions": [{"key": "a"}]})]}),
        f"spec.affinity.podAntiAffinity.{REQUIRED}[0].labelSelector.matchExpressions[0].operator",
    ),
    (
        _affinity(
            {
                REQUIRED: [
                    _term(labelSelector={"matchExpressions": [{"key": "a", "operator": "In"}]})
                ]
            }
        ),
        f"spec.affinity.podAntiAffinity.{REQUIRED}[0].labelSelector.matchExpressions[0].values",
    ),
    (
        _affinity({PREFERRED: [{"weight": 0, "podAffinityTerm": _term()}]}, "podAffinity"),
        f"spec.affinity.podAffinity.{PREFERRED}[0].weight",
    ),
    (
        _affinity({PREFERRED: [{"weight": 101, "podAffinityTerm": _term()}]}, "podAffinity"),
        f"spec.affinity.podAffinity.{PREFERRED}[0].weight",
    ),
    (
        _affinity({REQUIRED: {"topologyKey": HOST}}),
        f"spec.affinity.podAntiAffinity.{REQUIRED}",
    ),
    (
        _affinity({REQUIRED: [{"topologyKey": HOST, "matchLabelKeys": ["rev"]}]}),
        f"spec.affinity.podAntiAffinity.{REQUIRED}[0].matchLabelKeys",
    ),
    (
        _affinity({REQUIRED: [_term(namespaces=[""])]}),
        f"spec.affinity.podAntiAffinity.{REQUIRED}[0].namespaces[0]",
    ),
]


@pytest.mark.parametrize(("spec", "field"), BAD_AFFINITY, ids=[f for _, f in BAD_AFFINITY])
def test_bad_affinity_names_the_field(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(FieldError) as caught:
        read_pod_affinity(spec, "ns", {})
    assert caught.value.field == field


def _spread(**item: Any) -> dict[str, Any]:
    base = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
    return {"topologySpreadConstraints": [{**base, **item}]}


BAD_SPREAD = [
    (_spread(maxSkew=0), "maxSkew"),
    (_spread(maxSkew="1"), "maxSkew"),
    (_spread(topologyKey=""), "topologyKey"),
    (_spread(whenUnsatisfiable="Never"), "whenUnsatisfiable"),
    (_spread(minDomains=0), "minDomains"),
    (_spread(minDomains=2, whenUnsatisfiable="ScheduleAnyway"), "minDomains"),
    (_spread(nodeAffinityPolicy="Always"), "nodeAffinityPolicy"),
    (_spread(nodeTaintsPolicy="honor"), "nodeTaintsPolicy"),
    (_spread(labelSelector={"matchLabels": {"app": 3}}), "labelSelector.matchLabels.app"),
]


@pytest.mark.parametrize(("spec", "field"), BAD_SPREAD, ids=[f for _, f in BAD_SPREAD])
def test_bad_spread_names_the_field(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(FieldError) as caught:
        read_spread(spec, {})
    assert caught.value.field == f"spec.topologySpreadConstraints[0].{field}"


def _pod_body(scheduler: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "labels": {"app": "web"}},
        "spec": {"schedulerName": scheduler, "nodeName": "n0", "containers": [], **spec},
        "status": {"phase": "Running"},
    }


def test_our_pod_with_a_bad_term_is_refused() -> None:
    spec = _affinity({REQUIRED: [{"labelSelector": {}}]})
    with pytest.raises(FieldError):
        read_pod(_pod_body("kai-scheduler", spec), ResourceSpace(), "kai-scheduler")


def test_another_schedulers_pod_with_a_bad_term_keeps_its_place() -> None:
    spec = {
        **_affinity({REQUIRED: [{"labelSelector": {}}]}),
        **_spread(maxSkew=0),
    }
    pod = read_pod(_pod_body("default-scheduler", spec), ResourceSpace(), "kai-scheduler")
    assert pod.node_name == "n0"
    assert pod.pod_affinity is None
    assert pod.spread == ()


def test_another_schedulers_pod_keeps_its_anti_affinity_but_not_its_spread() -> None:
    spec = {**_affinity({REQUIRED: [_term()]}), **_spread()}
    pod = read_pod(_pod_body("default-scheduler", spec), ResourceSpace(), "kai-scheduler")
    assert pod.pod_affinity is not None
    assert len(pod.pod_affinity.anti_affinity) == 1
    assert pod.spread == ()
