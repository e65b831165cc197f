"""Related objects fetched before grouping, served to adapters as an ``ObjectLookup``.

Why this module exists: adapters are pure and synchronous; the objects they need besides
the owner chain (the RayCluster named in a RayJob's status, a Knative Revision, MPI
launcher pods, a legacy PodGroup) are declared through
:class:`~integrations.base.NeedsRelatedObjects`, read here once through the async
:class:`~podgrouper.kube.KubeReader`, and then looked up in memory.  A missing object
is an answer (``None``), not an error; other API errors propagate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from integrations import base
from kubeapi.errors import NotFoundError
from kubeapi.objects import Object
from kubeapi.protocol import KubeReader

_GetKey = tuple[str, str, str, str]
_ListKey = tuple[str, str, str, frozenset[tuple[str, str]]]


class FetchedLookup:
    """An :class:`~integrations.base.ObjectLookup` over objects read in advance."""

    def __init__(self) -> None:
        self._objects: dict[_GetKey, Object | None] = {}
        self._lists: dict[_ListKey, list[Object]] = {}

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> base.RawObject | None:
        return self._objects.get((api_version, kind, namespace, name))

    def list(
        self, api_version: str, kind: str, namespace: str, labels: Mapping[str, str]
    ) -> Sequence[base.RawObject]:
        return self._lists.get((api_version, kind, namespace, frozenset(labels.items())), [])

    async def fetch(self, queries: Iterable[base.ObjectQuery], reader: KubeReader) -> bool:
        """Read what ``queries`` name (each once); whether anything was new.

        A list of a type the API server does not serve (404) is empty.
        """
        new = False
        for query in queries:
            if query.name:
                key = (query.api_version, query.kind, query.namespace, query.name)
                if key not in self._objects:
                    new = True
                    self._objects[key] = await _get_or_none(reader, *key)
                continue
            list_key = (
                query.api_version,
                query.kind,
                query.namespace,
                frozenset(query.labels.items()),
            )
            if list_key not in self._lists:
                new = True
                try:
                    self._lists[list_key] = await reader.list(
                        query.api_version, query.kind, query.namespace, dict(query.labels)
                    )
                except NotFoundError:
                    self._lists[list_key] = []
        return new


async def _get_or_none(
    reader: KubeReader, api_version: str, kind: str, namespace: str, name: str
) -> Object | None:
    try:
        return await reader.get(api_version, kind, namespace, name)
    except NotFoundError:
        return None
