"""The engine benchmark's generator with inter-pod terms (issue 15), at a tiny size.

Why: issue 15's target compares allocate on the same cluster with and without a fifth
of the pending pods anti-affine per hostname. That comparison means something only if
the two clusters differ in the rules (and the labels they select) alone, the share is what was asked (whole gangs),
the nodes carry the topology labels the terms name, and the engine does keep an
anti-affine gang's pods on different nodes. Nothing else would notice if a change to
the generator broke one of these, since the benchmark runs by hand. Timings are not
checked.
"""

from __future__ import annotations

import collections
import copy
from typing import Any

import pytest

from benchmarks import engine, generate
from crds.topology import HOSTNAME_LABEL
from scheduler.actions.allocate import AllocateAction
from scheduler.cache.cluster_cache import ClusterCache
from scheduler.config import SchedulerConfig
from scheduler.cycle import open_session
from tests.kits.worlds import sourced

SIZE = (60, 1200, 400)


def _pending(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == "Pod" and "nodeName" not in o["spec"]]


def _anti_affine(pod: dict[str, Any]) -> bool:
    terms = pod["spec"].get("affinity", {}).get("podAntiAffinity", {})
    return "requiredDuringSchedulingIgnoredDuringExecution" in terms


def _without_rules(objects: list[dict[str, Any]], *, labels: bool) -> list[dict[str, Any]]:
    out = copy.deepcopy(objects)
    for obj in out:
        if obj["kind"] == "Pod":
            obj["spec"].pop("affinity", None)
            obj["spec"].pop("topologySpreadConstraints", None)
            if labels:
                obj["metadata"].pop("labels", None)
    return out


@pytest.mark.parametrize("label_every_pod", [False, True])
def test_the_constrained_cluster_differs_from_the_plain_one_in_the_rules_only(
    label_every_pod: bool,
) -> None:
    plain = generate.cluster(*SIZE, label_every_pod=label_every_pod)
    constrained = generate.cluster(
        *SIZE, anti_affinity=0.2, zone_spread=0.1, label_every_pod=label_every_pod
    )
    assert not any(_anti_affine(p) for p in _pending(plain))
    if label_every_pod:  # the labels are there before the rules
        assert _without_rules(constrained, labels=False) == plain
    else:
        assert _without_rules(constrained, labels=True) == plain


@pytest.mark.parametrize("share", [0.2, 0.5])
def test_the_share_is_met_by_whole_gangs(share: float) -> None:
    pending = _pending(generate.cluster(*SIZE, anti_affinity=share, label_every_pod=True))
    marked = [p for p in pending if _anti_affine(p)]
    assert share * len(pending) <= len(marked) < share * len(pending) + 16  # gangs of <= 16
    apps = {p["metadata"]["labels"][generate.APP_LABEL] for p in marked}
    in_marked_apps = [p for p in pending if p["metadata"]["labels"][generate.APP_LABEL] in apps]
    assert len(in_marked_apps) == len(marked)
    term = marked[0]["spec"]["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ][0]
    assert term["topologyKey"] == HOSTNAME_LABEL
    assert term["labelSelector"] == {
        "matchLabels": {generate.APP_LABEL: marked[0]["metadata"]["labels"][generate.APP_LABEL]}
    }


def test_zone_spread_takes_other_gangs_hard_and_preferred() -> None:
    pending = _pending(generate.cluster(*SIZE, anti_affinity=0.2, zone_spread=0.2))
    hard = [p for p in pending if "topologySpreadConstraints" in p["spec"]]
    preferred = [
        p
        for p in pending
        if "preferredDuringSchedulingIgnoredDuringExecution"
        in p["spec"].get("affinity", {}).get("podAntiAffinity", {})
    ]
    assert hard
    assert preferred
    assert not any(_anti_affine(p) for p in hard + preferred)
    assert {c["topologyKey"] for p in hard for c in p["spec"]["topologySpreadConstraints"]} == {
        generate.ZONE
    }


def test_nodes_carry_hostname_and_zone() -> None:
    nodes = [o for o in generate.cluster(*SIZE) if o["kind"] == "Node"]
    assert all(n["metadata"]["labels"][HOSTNAME_LABEL] == n["metadata"]["name"] for n in nodes)
    zones = {n["metadata"]["labels"][generate.ZONE] for n in nodes}
    assert len(zones) == generate.ZONES


@pytest.mark.parametrize("label_every_pod", [False, True])
def test_an_anti_affine_gang_is_placed_one_pod_per_node(label_every_pod: bool) -> None:
    objects = generate.cluster(*SIZE, anti_affinity=0.5, label_every_pod=label_every_pod)
    marked = {p["metadata"]["name"] for p in _pending(objects) if _anti_affine(p)}
    cache = ClusterCache()
    cache.upsert_all(sourced(objects))
    session = open_session(cache.snapshot().snapshot, SchedulerConfig(actions=("allocate",)))
    AllocateAction().execute(session)
    placed = [*session.decisions.binds, *session.decisions.pipelined]
    per_node = collections.Counter(
        (pod.labels[generate.APP_LABEL], node) for pod, node in placed if pod.name in marked
    )
    assert per_node  # some anti-affine pods were placed at all
    assert max(per_node.values()) == 1


def test_measure_reports_allocate_with_the_share() -> None:
    row = engine.measure(*SIZE, anti_affinity=0.2, zone_spread=0.1, label_every_pod=True)
    assert {"allocate_s", "allocate_cpu_s", "placed_pods"} <= row.keys()
    assert row["placed_pods"] > 0
