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

from hypothesis import given
from hypothesis import strategies as st

from scheduler.config import SchedulerConfig
from tests.kits.affinity import HOST, ZONE, affinity, spread, term, violations, with_spread, zoned
from tests.kits.worlds import job, pod, queue, run_objects

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
