"""Properties of inter-pod affinity and spread (docs/semantics.md §14), checked independently.

Safety: in random small clusters with running pods (ours and another scheduler's, some
with required anti-affinity) and pending gangs carrying random required affinity,
anti-affinity and ``DoNotSchedule`` spread, no required rule is broken after a cycle,
as judged by the kit's checker (tests/kits/affinity.py), which shares no code with the
plugin: after allocate every rule; after KAI's five actions (which may move and evict
pods) every anti-affinity rule, in both directions. Liveness: a gang that can meet its
rules on empty room (one node per pod for self anti-affinity, enough zones for spread,
room beside the pod it must join) is placed whole.

These fail without the plugin: random worlds soon put two anti-affine pods on one node
or a spread gang on one zone (bin-packing stacks), which the checker reports.
"""

from __future__ import annotations

from typing import Any
from unittest.mock import patch

from hypothesis import find, given, settings
from hypothesis import strategies as st

from scheduler.config import SchedulerConfig
from scheduler.plugins import builtin_plugins
from tests.kits.affinity import (
    HOST,
    ZONE,
    affinity,
    namespace,
    placed,
    spread,
    term,
    violations,
    with_spread,
    zoned,
)
from tests.kits.worlds import job, node, pod, queue, run_objects, taint

KEYS = (HOST, ZONE)
APPS = ("a", "b", "c")


def spread_set(name: str, key: str, skew: int = 1) -> dict[str, Any]:
    """DoNotSchedule spread of the pods labelled ``set=<name>``: only the gang ``name``
    and running pods carry it, so every pod the cycle places that the constraint counts
    also carries the constraint, and the final placement shows whether it held (a pod
    with no constraint placed later may lawfully join any domain)."""
    found = spread(name, key, skew=skew)
    found["labelSelector"] = {"matchLabels": {"set": name}}
    return found


@st.composite
def rule(draw: st.DrawFn, app: str, name: str) -> dict[str, Any]:
    """One random rule for the gang ``name`` labelled ``app``: spec fields for its pods."""
    kind = draw(st.sampled_from(["none", "self-anti", "anti", "affinity", "spread", "both"]))
    key = draw(st.sampled_from(KEYS))
    other = draw(st.sampled_from(APPS))
    if kind == "self-anti":
        return {"affinity": affinity(anti=[term(app, key)])}
    if kind == "anti":
        return {"affinity": affinity(anti=[term(other, key)])}
    if kind == "affinity":
        return {"affinity": affinity(required=[term(other, key)])}
    if kind == "spread":
        return {"spread": [spread_set(name, key, draw(st.integers(1, 2)))]}
    if kind == "both":
        return {
            "affinity": affinity(anti=[term(other, HOST)]),
            "spread": [spread_set(name, ZONE)],
        }
    return {}


@st.composite
def world(draw: st.DrawFn) -> list[Any]:
    nodes = draw(st.integers(2, 6))
    zones = draw(st.integers(1, 3))
    cpus = draw(st.lists(st.sampled_from(["4", "8"]), min_size=nodes, max_size=nodes))
    objects: list[Any] = [queue("q")]
    objects += [zoned(f"n{i}", f"z{i % zones}", cpu=cpus[i]) for i in range(nodes)]
    for i in range(draw(st.integers(0, 5))):
        app = draw(st.sampled_from(APPS))
        extra: dict[str, Any] = {}
        if draw(st.booleans()):
            extra["affinity"] = affinity(
                anti=[term(draw(st.sampled_from(APPS)), draw(st.sampled_from(KEYS)))]
            )
        objects += pod(
            f"r{i}",
            state="Running",
            node=f"n{draw(st.integers(0, nodes - 1))}",
            labels={"app": app, "set": draw(st.sampled_from(["g0", "g1", "g2"]))},
            cpu="1",
            scheduler_name=draw(st.sampled_from(["kai-scheduler", "default-scheduler"])),
            **extra,
        )
    for g in range(draw(st.integers(1, 3))):
        app = draw(st.sampled_from(APPS))
        chosen = draw(rule(app, f"g{g}"))
        gang = job(
            f"g{g}",
            "q",
            draw(st.integers(1, 4)),
            cpu=draw(st.sampled_from(["1", "2"])),
            labels={"app": app, "set": f"g{g}"},
            **({"affinity": chosen["affinity"]} if "affinity" in chosen else {}),
        )
        objects += with_spread(gang, *chosen["spread"]) if "spread" in chosen else gang
    return objects


@given(world())
def test_allocate_never_breaks_a_required_rule(objects: list[Any]) -> None:
    result = run_objects(objects)
    assert violations(objects, result) == []


@given(world())
def test_the_five_actions_never_break_an_anti_affinity(objects: list[Any]) -> None:
    result = run_objects(objects, SchedulerConfig())
    assert violations(objects, result, affinity_too=False, spread_too=False) == []


@given(nodes=st.integers(1, 6), extra=st.integers(0, 2), key=st.sampled_from(KEYS))
def test_a_self_anti_affine_gang_with_a_node_each_is_placed(
    nodes: int, extra: int, key: str
) -> None:
    # one zone per node when the key is the zone, so each pod has a domain of its own
    objects: list[Any] = [queue("q")]
    objects += [zoned(f"n{i}", f"z{i}") for i in range(nodes + extra)]
    objects.append(
        job("g", "q", nodes, labels={"app": "g"}, affinity=affinity(anti=[term("g", key)]))
    )
    result = run_objects(objects)
    assert len(result.binds) == nodes
    assert violations(objects, result) == []


@given(zones=st.integers(1, 4), per_zone=st.integers(1, 3), size=st.integers(1, 8))
def test_a_spread_gang_that_fits_is_placed(zones: int, per_zone: int, size: int) -> None:
    objects: list[Any] = [queue("q")]
    objects += [zoned(f"n{z}-{i}", f"z{z}") for z in range(zones) for i in range(per_zone)]
    objects += with_spread(job("g", "q", size, labels={"app": "g"}), spread("g"))
    result = run_objects(objects)
    assert len(result.binds) == size  # 20-CPU nodes hold every pod; skew 1 is reachable
    assert violations(objects, result) == []


@given(where=st.integers(0, 3), size=st.integers(1, 4), key=st.sampled_from(KEYS))
def test_a_gang_affine_to_a_running_pod_with_room_beside_it_is_placed(
    where: int, size: int, key: str
) -> None:
    objects: list[Any] = [queue("q")]
    objects += [zoned(f"n{i}", f"z{i % 2}") for i in range(4)]
    objects += pod("db", state="Running", node=f"n{where}", labels={"app": "db"})
    objects.append(job("g", "q", size, affinity=affinity(required=[term("db", key)])))
    result = run_objects(objects)
    assert len(result.binds) == size
    assert violations(objects, result) == []


# --- a second, independent set (issue 15) --------------------------------------------
#
# Worlds with namespaces (Namespace objects with labels, and one without an object),
# pods being deleted, Failed pods, another scheduler's pods, nodes without a zone label
# and tainted nodes, and gangs whose terms use namespaces, namespaceSelector,
# matchLabelKeys and matchExpressions, and whose spread uses nodeSelector, minDomains and
# nodeTaintsPolicy. The labels are chosen so that the checker's judgement on the final
# placement is exact (it cannot see the order of the cycle's placements): a required
# affinity term selects either running pods only (role=db, which no pending pod carries)
# or the gang's own members (set=<gang>), and a spread selector selects set=<gang>, which
# only the gang and running pods carry. Anti-affinity is judged exactly in any case.
#
# Why these can fail: without the plugin bin-packing stacks a gang on one node and on
# pods it should avoid, and ignores the domains its affinity names, which the checker
# reports; ``test_the_checker_catches_a_cycle_without_the_plugin`` shows such a world.

NAMESPACES = ("default", "blue", "plain")  # "plain" has no Namespace object
NS_OBJECTS = [namespace("default", team="red"), namespace("blue", team="blue")]


@st.composite
def selector_term(draw: st.DrawFn, key: str) -> dict[str, Any]:
    """A pod (anti-)affinity term over app labels with random namespace scope."""
    app = draw(st.sampled_from(APPS))
    selector: dict[str, Any] = draw(
        st.sampled_from(
            [
                {"matchLabels": {"app": app}},
                {"matchExpressions": [{"key": "app", "operator": "In", "values": [app, "c"]}]},
                {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
                {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": [app]}]},
            ]
        )
    )
    extra: dict[str, Any] = {}
    scope = draw(st.sampled_from(["own", "list", "all", "label", "name", "both"]))
    if scope == "list":
        extra["namespaces"] = draw(st.lists(st.sampled_from(NAMESPACES), min_size=1, max_size=2))
    elif scope == "all":
        extra["namespaceSelector"] = {}
    elif scope == "label":
        extra["namespaceSelector"] = {
            "matchLabels": {"team": draw(st.sampled_from(["red", "blue"]))}
        }
    elif scope == "name":
        extra["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": "plain"}}
    elif scope == "both":
        extra["namespaces"] = ["plain"]
        extra["namespaceSelector"] = {"matchLabels": {"team": "blue"}}
    if draw(st.booleans()):
        extra[draw(st.sampled_from(["matchLabelKeys", "mismatchLabelKeys"]))] = ["tenant"]
    return term(selector=selector, key=key, **extra)


@st.composite
def rich_world(draw: st.DrawFn) -> list[Any]:
    nodes = draw(st.integers(2, 6))
    zones = draw(st.integers(2, 3))
    objects: list[Any] = [queue("q"), *NS_OBJECTS]
    for i in range(nodes):
        extra: dict[str, Any] = {"cpu": draw(st.sampled_from(["3", "6", "20"]))}
        if draw(st.integers(0, 5)) == 0:
            extra["taints"] = [taint("gpu")]
        if draw(st.booleans()):
            extra["labels"] = {"pool": "y"}
        if draw(st.integers(0, 6)) == 0:  # a node without a zone label
            objects.append(
                node(f"n{i}", labels={HOST: f"n{i}", **extra.pop("labels", {})}, **extra)
            )
        else:
            objects.append(zoned(f"n{i}", f"z{i % zones}", **extra))
    gangs = draw(st.integers(1, 3))
    for i in range(draw(st.integers(0, 6))):
        labels = {
            "app": draw(st.sampled_from(APPS)),
            "tenant": draw(st.sampled_from(["t1", "t2"])),
            "set": f"g{draw(st.integers(0, gangs - 1))}",
        }
        if draw(st.booleans()):
            labels["role"] = "db"
        args: dict[str, Any] = {}
        if draw(st.integers(0, 2)) == 0:
            args["affinity"] = affinity(anti=[draw(selector_term(draw(st.sampled_from(KEYS))))])
        objects += placed(
            f"r{i}",
            f"n{draw(st.integers(0, nodes - 1))}",
            labels,
            state=draw(st.sampled_from(["Running", "Running", "Bound", "Releasing", "Failed"])),
            namespace=draw(st.sampled_from(NAMESPACES)),
            scheduler_name=draw(st.sampled_from(["kai-scheduler", "default-scheduler"])),
            cpu="1",
            **args,
        )
    for g in range(gangs):
        name = f"g{g}"
        ns = draw(st.sampled_from(NAMESPACES))
        labels = {"app": draw(st.sampled_from(APPS)), "tenant": draw(st.sampled_from(["t1", "t2"]))}
        if draw(st.integers(0, 3)):
            labels["set"] = name  # else the gang is outside its own spread selector
        anti = [
            draw(selector_term(draw(st.sampled_from(KEYS)))) for _ in range(draw(st.integers(0, 2)))
        ]
        required = []
        kind = draw(st.sampled_from(["none", "db", "self"]))
        if kind == "db":
            required.append(
                term(
                    selector={"matchLabels": {"role": "db"}},
                    key=draw(st.sampled_from(KEYS)),
                    namespaceSelector={},
                )
            )
        elif kind == "self" and "set" in labels:
            required.append(
                term(selector={"matchLabels": {"set": name}}, key=draw(st.sampled_from(KEYS)))
            )
        pod_args: dict[str, Any] = {}
        if anti or required:
            pod_args["affinity"] = affinity(anti=anti, required=required)
        if draw(st.booleans()):
            pod_args["node_selector"] = {"pool": "y"}
        if draw(st.booleans()):
            pod_args["tolerations"] = [{"key": "gpu", "operator": "Exists"}]
        gang = job(
            name,
            "q",
            draw(st.integers(1, 4)),
            cpu=draw(st.sampled_from(["1", "2"])),
            labels=labels,
            namespace=ns,
            **pod_args,
        )
        if draw(st.booleans()):
            constraint = spread(name, draw(st.sampled_from(KEYS)), skew=draw(st.integers(1, 2)))
            constraint["labelSelector"] = {"matchLabels": {"set": name}}
            if draw(st.booleans()):
                constraint["minDomains"] = draw(st.integers(1, 4))
            if draw(st.booleans()):
                constraint["nodeAffinityPolicy"] = draw(st.sampled_from(["Honor", "Ignore"]))
            if draw(st.booleans()):
                constraint["nodeTaintsPolicy"] = draw(st.sampled_from(["Honor", "Ignore"]))
            if draw(st.booleans()):
                constraint["matchLabelKeys"] = ["tenant"]
            objects += with_spread(gang, constraint)
        else:
            objects.append(gang)
    return objects


@given(rich_world())
def test_allocate_keeps_every_required_rule_with_namespaces_and_selectors(
    objects: list[Any],
) -> None:
    result = run_objects(objects)
    assert violations(objects, result) == []


@given(rich_world())
def test_the_five_actions_keep_anti_affinity_with_namespaces_and_selectors(
    objects: list[Any],
) -> None:
    result = run_objects(objects, SchedulerConfig())
    assert violations(objects, result, affinity_too=False, spread_too=False) == []


@given(zones=st.integers(1, 3), taken=st.sets(st.integers(0, 2)), size=st.integers(1, 6))
def test_a_gang_self_affine_per_zone_that_fits_one_node_is_placed(
    zones: int, taken: set[int], size: int
) -> None:
    """Other pods in some zones do not stop a gang that is affine to itself per zone and
    fits on any one node (the first member goes anywhere, the rest follow it)."""
    objects: list[Any] = [queue("q")]
    objects += [zoned(f"n{z}-{i}", f"z{z}") for z in range(zones) for i in range(2)]
    for z in taken:
        if z < zones:
            objects += placed(f"other{z}", f"n{z}-0", {"app": "g"}, namespace="blue")
    objects.append(
        job(
            "g",
            "q",
            size,
            labels={"set": "g"},
            affinity=affinity(required=[term(selector={"matchLabels": {"set": "g"}}, key=ZONE)]),
        )
    )
    result = run_objects(objects)
    assert len(result.binds) == size
    assert violations(objects, result) == []


@given(zones=st.integers(2, 4), db_zones=st.sets(st.integers(0, 3)), size=st.integers(1, 4))
def test_a_gang_anti_affine_to_running_pods_per_zone_finds_the_free_zone(
    zones: int, db_zones: set[int], size: int
) -> None:
    """Zone z0 never holds a db pod, so a gang anti-affine per zone to db pods (in every
    namespace) has a zone; its members are not anti-affine to each other."""
    objects: list[Any] = [queue("q"), *NS_OBJECTS]
    objects += [zoned(f"n{z}", f"z{z}") for z in range(zones)]
    for z in sorted(db_zones):
        if 0 < z < zones:
            objects += placed(f"db{z}", f"n{z}", {"app": "db"}, namespace="blue", cpu="10")
    objects.append(
        job("g", "q", size, affinity=affinity(anti=[term("db", ZONE, namespaceSelector={})]))
    )
    result = run_objects(objects)
    assert len(result.binds) == size
    held = {f"n{z}" for z in db_zones if 0 < z < zones}
    assert not held & {b.node for b in result.binds}
    assert violations(objects, result) == []


@given(
    eligible=st.integers(1, 3),
    ineligible=st.integers(1, 2),
    size=st.integers(1, 9),
    policy=st.sampled_from([None, "Honor"]),
)
def test_spread_counts_only_zones_the_pod_may_use(
    eligible: int, ineligible: int, size: int, policy: str | None
) -> None:
    """nodeAffinityPolicy Honor (the default): empty zones the pod's nodeSelector rules
    out do not hold the minimum at 0, so a gang larger than the number of its zones still
    spreads over them (it would wait if those zones counted)."""
    objects: list[Any] = [queue("q")]
    objects += [zoned(f"y{z}", f"z{z}", labels={"pool": "y"}) for z in range(eligible)]
    objects += [zoned(f"x{z}", f"z{eligible + z}") for z in range(ineligible)]
    constraint = spread("g")
    if policy is not None:
        constraint["nodeAffinityPolicy"] = policy
    objects += with_spread(
        job("g", "q", size, labels={"app": "g"}, node_selector={"pool": "y"}), constraint
    )
    result = run_objects(objects)
    assert len(result.binds) == size
    assert violations(objects, result) == []


@given(zones=st.integers(1, 4), size=st.integers(1, 4))
def test_a_gang_no_larger_than_min_domains_is_placed_one_per_zone(zones: int, size: int) -> None:
    """With minDomains = zones and maxSkew 1, a gang of at most ``zones`` pods goes one per
    zone (the minimum is 0 only while fewer domains than minDomains are eligible)."""
    objects: list[Any] = [queue("q")]
    objects += [zoned(f"n{z}", f"z{z}") for z in range(zones)]
    objects += with_spread(
        job("g", "q", size, labels={"app": "g"}), spread("g", minDomains=max(zones, 1))
    )
    result = run_objects(objects)
    if size <= zones:
        assert sorted(b.node for b in result.binds) == [f"n{z}" for z in range(size)]
    assert violations(objects, result) == []


def _without_pod_affinity(config: SchedulerConfig) -> list[Any]:
    return [p for p in builtin_plugins(config) if type(p).__name__ != "PodAffinityPlugin"]


def test_the_checker_catches_a_cycle_without_the_plugin() -> None:
    """The safety properties can fail: with the inter-pod affinity plugin removed, a
    world drawn from ``rich_world`` soon breaks a required rule in the checker's eyes."""

    def broken(objects: list[Any]) -> bool:
        return bool(violations(objects, run_objects(objects)))

    with patch("scheduler.cycle.builtin_plugins", _without_pod_affinity):
        found = find(rich_world(), broken, settings=settings(max_examples=500, database=None))
    assert violations(found, run_objects(found)) == []  # the plugin keeps the same world
