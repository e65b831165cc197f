"""Informers read DRA objects, and a server that does not serve ``resource.k8s.io/v1``
(Kubernetes before 1.34) still gets scheduled: those kinds count as synced and empty."""

from __future__ import annotations

from typing import Any

from live_objects import api_with, with_informers

from kubeapi.errors import NotFoundError
from kubeapi.protocol import Listing
from scheduler.live.informers import Informers
from tests.kits import worlds as st
from tests.kits.dra import claim, device_class, resource_slice
from tests.kits.fake_kube import FakeKube


def older_server(fake: FakeKube) -> FakeKube:
    """``fake`` serving nothing of ``resource.k8s.io``, as a 1.33 API server."""
    served = fake.list_all

    async def list_all(api_version: str, kind: str, *args: Any, **kwargs: Any) -> Listing:
        if api_version.startswith("resource.k8s.io/"):
            raise NotFoundError(f"{api_version} {kind}", "the API server serves no such kind")
        return await served(api_version, kind, *args, **kwargs)

    fake.list_all = list_all  # type: ignore[method-assign]
    return fake


def test_dra_objects_reach_the_cache() -> None:
    fake = api_with([st.node("n1"), device_class(), resource_slice("n1", "gpu-0"), claim("c")])
    seen: dict[str, Any] = {}

    async def scenario(informers: Informers) -> None:
        dra = informers.cache.snapshot(0).snapshot.dra
        seen.update(
            claims=sorted(dra.claims), slices=sorted(dra.slices), classes=sorted(dra.classes)
        )

    with_informers(fake, scenario)
    assert seen == {
        "claims": ["default/c"],
        "slices": ["n1-gpu.example.com"],
        "classes": ["gpu.example.com"],
    }


def test_an_api_server_without_dra_is_still_synced() -> None:
    fake = older_server(api_with([st.node("n1"), st.queue("q"), st.job("a", "q")]))

    async def scenario(informers: Informers) -> None:
        assert informers.synced
        assert len(informers.cache.snapshot(0).snapshot.nodes) == 1

    with_informers(fake, scenario)  # wait_synced would time out otherwise
