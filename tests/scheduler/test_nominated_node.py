"""Nominated node: ``status.nominatedNodeName`` outranks every other score (kai-semantics §5.3)."""

from __future__ import annotations

from typing import Any

from scheduler.testing import Scenario, check, job, node, queue


def _pod(objects: list[Any], name: str) -> dict[str, Any]:
    flat = [o for item in objects for o in (item if isinstance(item, list) else [item])]
    return next(o for o in flat if o["kind"] == "Pod" and o["metadata"]["name"] == name)


def test_nominated_node_wins_over_binpack() -> None:
    # Without the nomination binpack picks the fuller n1; the +1,000,000 sends the pod to n0.
    objects: list[Any] = [
        queue("q"),
        node("n0", gpus=4),
        node("n1", gpus=4),
        job("run", "q", 2, gpus=1, states=["Running"] * 2, nodes=["n1"] * 2),
        job("j", "q", gpus=1),
    ]
    pending = _pod(objects, "j-0")
    pending.setdefault("status", {})["nominatedNodeName"] = "n0"
    check(Scenario("nominated-node", objects, binds={"j-0": "n0"}))


def test_unknown_nominated_node_is_ignored() -> None:
    objects: list[Any] = [
        queue("q"),
        node("n0", gpus=4),
        node("n1", gpus=4),
        job("run", "q", 2, gpus=1, states=["Running"] * 2, nodes=["n1"] * 2),
        job("j", "q", gpus=1),
    ]
    pending = _pod(objects, "j-0")
    pending.setdefault("status", {})["nominatedNodeName"] = "gone"
    check(Scenario("nominated-node-missing", objects, binds={"j-0": "n1"}))
