"""Property: nothing is ever pipelined behind a pod stuck in Releasing (docs/semantics.md §1.3).

Random clusters from the allocate properties, where much capacity is being released;
some Releasing pods were deleted long ago (past ``stuckInReleasingThreshold``). After
one allocate cycle no node is over-committed once every pod that is *not* stuck has
gone: a stuck pod's room is counted as staying, so what was pipelined fits beside it.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kits.worlds import ALLOCATE_ONLY, NOW, run_objects
from tests.scheduler.test_allocate_properties import ON_NODE, World, worlds

LONG_AGO = (NOW - timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _stuck(objects: list[dict[str, Any]], names: set[str]) -> list[dict[str, Any]]:
    """``objects`` with the named pods' deletion started ten minutes before the cycle."""
    out = []
    for obj in objects:
        meta = obj["metadata"]
        if obj["kind"] == "Pod" and meta["name"] in names:
            obj = {**obj, "metadata": {**meta, "deletionTimestamp": LONG_AGO}}
        out.append(obj)
    return out


@settings(deadline=None, max_examples=200)
@given(worlds(releasing=12), st.data())
def test_nothing_is_pipelined_behind_a_stuck_pod(world: World, data: st.DataObject) -> None:
    releasing = sorted(p.key.split("/", 1)[1] for p in world.pods if p.state == "Releasing")
    stuck = (
        set(data.draw(st.lists(st.sampled_from(releasing), unique=True))) if releasing else set()
    )
    result = run_objects(_stuck(world.objects, stuck), ALLOCATE_ONLY)
    placed = {b.pod: b.node for b in [*result.binds, *result.pipelined]}
    staying = {n: [0, 0, 0, 0] for n in world.nodes}
    for p in world.pods:
        row = (*p.request, 1)
        name = p.key.split("/", 1)[1]
        if p.state in ON_NODE and (p.state != "Releasing" or name in stuck):
            assert p.node is not None
            for r in range(4):
                staying[p.node][r] += row[r]
        if p.key in placed:
            for r in range(4):
                staying[placed[p.key]][r] += row[r]
    for name, capacity in world.nodes.items():
        for r in range(4):
            assert staying[name][r] <= capacity[r], (name, r, staying[name], sorted(stuck))
