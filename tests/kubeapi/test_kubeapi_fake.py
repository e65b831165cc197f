"""tests.kits.fake_kube.FakeKube behaves like the API server where controllers depend on it:
resourceVersions, list-then-watch, compaction (410), preconditions, strategic merge of
conditions, binding; and the kubeapi facade exports exactly its names without aiohttp."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from kubeapi import errors
from tests.kits.fake_kube import FakeKube

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}


def test_list_then_watch_sees_later_changes_only() -> None:
    async def main() -> list[tuple[str, str]]:
        fake = FakeKube()
        fake.add(NODE)
        listing = await fake.list_all("v1", "Node")
        fake.add({**NODE, "metadata": {"name": "n2"}})
        fake.remove("v1", "Node", "", "n1")
        fake.end_watches()
        stream = fake.watch("v1", "Node", listing.resource_version)
        return [(e.type, e.object["metadata"]["name"]) async for e in stream]

    assert asyncio.run(main()) == [("ADDED", "n2"), ("DELETED", "n1")]


def test_compacted_history_raises_gone() -> None:
    async def main() -> None:
        fake = FakeKube()
        fake.add(NODE)
        fake.compact()
        async for _ in fake.watch("v1", "Node", "0"):
            pass

    with pytest.raises(errors.GoneError):
        asyncio.run(main())


def test_preconditions_strategic_conditions_and_binding() -> None:
    async def main() -> None:
        fake = FakeKube()
        pod = fake.add(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p", "namespace": "ns"},
                "status": {"conditions": [{"type": "Ready", "status": "False"}]},
            }
        )
        cond = {"type": "PodScheduled", "status": "False"}
        patch = {"status": {"conditions": [cond]}}
        stored = await fake.patch(
            "v1", "Pod", "ns", "p", patch, subresource="status", strategic=True
        )
        assert [c["type"] for c in stored["status"]["conditions"]] == ["Ready", "PodScheduled"]
        with pytest.raises(errors.ConflictError):
            await fake.replace({**pod, "metadata": {**pod["metadata"], "resourceVersion": "0"}})
        with pytest.raises(errors.ConflictError):
            await fake.delete("v1", "Pod", "ns", "p", uid="other")
        await fake.bind("ns", "p", "n1")
        assert fake.objects[("v1", "Pod", "ns", "p")]["spec"]["nodeName"] == "n1"
        fake.fail("delete", errors.TransientError("Pod ns/p", "boom", 503))
        with pytest.raises(errors.TransientError):
            await fake.delete("v1", "Pod", "ns", "p")
        await fake.delete("v1", "Pod", "ns", "p", uid=pod["metadata"]["uid"])
        assert fake.stored("v1", "Pod", "ns", "p") is None

    asyncio.run(main())


def test_importing_the_package_and_the_fake_does_not_load_aiohttp() -> None:
    code = "import sys, kubeapi, tests.kits.fake_kube; print('aiohttp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
