"""Nominated node: ``status.nominatedNodeName`` outranks every other score (docs/semantics.md §5.3)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.kits.worlds import Scenario, check, job, node, queue


def _cluster(nominated: str) -> list[Any]:
    """n1 is fuller (bin-pack's choice); the pending pod j-0 nominates ``nominated``."""
    objects: list[Any] = [
        queue("q"),
        node("n0", gpus=4),
        node("n1", gpus=4),
        job("run", "q", 2, gpus=1, states=["Running"] * 2, nodes=["n1"] * 2),
        job("j", "q", gpus=1),
    ]
    flat = [o for item in objects for o in (item if isinstance(item, list) else [item])]
    pending = next(o for o in flat if o["kind"] == "Pod" and o["metadata"]["name"] == "j-0")
    pending.setdefault("status", {})["nominatedNodeName"] = nominated
    return objects


@pytest.mark.parametrize(
    ("nominated", "expected"),
    [("n0", "n0"), ("gone", "n1")],
    ids=["nominated-node-wins-over-binpack", "unknown-nominated-node-ignored"],
)
def test_nominated_node(nominated: str, expected: str) -> None:
    check(Scenario(f"nominated-{nominated}", _cluster(nominated), binds={"j-0": expected}))
