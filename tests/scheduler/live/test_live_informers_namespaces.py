"""Informers watch Namespaces into the cache, for pod affinity's namespace selectors.

Why: a term's ``namespaceSelector`` picks namespaces by their labels; a label added
to a Namespace (a watch event) must reach the next snapshot, a deleted Namespace
must leave it, and a Namespace whose labels are broken is queued for its Event while
the others are served.
"""

from __future__ import annotations

from typing import Any

from live_objects import api_with, until, with_informers

from scheduler.live.informers import Informers


def _namespace(name: str, **labels: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def test_namespaces_are_listed_and_watched() -> None:
    broken = _namespace("broken", team=7)
    fake = api_with([_namespace("red", team="red"), _namespace("gone"), broken])

    async def scenario(informers: Informers) -> None:
        fake.add(_namespace("red", team="red", tier="gold"))
        fake.remove("v1", "Namespace", "", "gone")
        await until(
            lambda: (
                informers.cache.snapshot(0).snapshot.namespace_labels.get("red", {}).get("tier")
                == "gold"
                and "gone" not in informers.cache.snapshot(0).snapshot.namespace_labels
            )
        )

    informers = with_informers(fake, scenario)
    labels = informers.cache.snapshot(0).snapshot.namespace_labels
    assert labels == {"red": {"team": "red", "tier": "gold"}}
    assert [obj["metadata"]["name"] for obj, _ in informers.invalid] == ["broken"]
