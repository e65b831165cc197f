"""Informers watch PersistentVolumeClaims, PersistentVolumes and StorageClasses into the cache.

Why: the live scheduler places pods with claims from the same cache the offline
command fills; a claim bound by the PV controller (a watch event) must reach the
next snapshot, and a broken PV is queued for its Event while the others are served.
"""

from __future__ import annotations

from live_objects import api_with, until, with_informers

from scheduler.live.informers import Informers
from tests.kits.volumes import pv, pvc, storage_class


def test_volume_kinds_are_listed_and_watched() -> None:
    broken = pv("broken")
    broken["spec"]["capacity"]["storage"] = "lots"
    fake = api_with([storage_class("local"), pv("pv1", node="n1"), pvc("data"), broken])

    async def scenario(informers: Informers) -> None:
        fake.add(pvc("data", volume="pv1"))  # the PV controller bound it
        await until(lambda: informers.cache.snapshot(0).snapshot.volumes.claims[
            "default/data"].volume_name == "pv1")  # fmt: skip

    informers = with_informers(fake, scenario)
    volumes = informers.cache.snapshot(0).snapshot.volumes
    assert set(volumes.volumes) == {"pv1"}
    assert set(volumes.classes) == {"local"}
    assert [obj["metadata"]["name"] for obj, _ in informers.invalid] == ["broken"]
