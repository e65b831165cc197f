"""kubeapi: the small Kubernetes client every podmuster component shares.

Why this package exists: the podgrouper, the scheduler and the binder each need a few
dozen API calls; one narrow, typed, async surface (protocols + one aiohttp
implementation + one in-memory fake) keeps HTTP details and library exceptions out of
them.  This package imports nothing of ours; only :mod:`kubeapi.http` imports aiohttp,
and this facade does not import it.

API (all coroutines, all raising :mod:`kubeapi.errors`)::

    creds = kubeapi.load_credentials(kubeconfig="", context="")   # or in-cluster
    from kubeapi.http import KubeHttp
    api = KubeHttp(creds, component="podmuster-scheduler",         # KubeController
                   rate_limit=kubeapi.RateLimit(qps=50, burst=300)) # optional; None: unlimited
    await api.get(api_version, kind, namespace, name)              # namespace "" = cluster
    await api.get_metadata(...); await api.list(api_version, kind, namespace, labels)
    await api.create(obj); await api.replace(obj)                  # Conflict on races
    await api.merge_patch(api_version, kind, namespace, name, patch)
    await api.patch(..., patch, subresource="status", strategic=False)
    await api.delete(api_version, kind, namespace, name, uid="")  # uid precondition
    await api.bind(namespace, pod, node, uid="")                   # pods/{pod}/binding
    await api.create_event(involved_obj, "Warning", reason, message)
    listing = await api.list_all(api_version, kind)                # .items, .resource_version
    async for event in api.watch(api_version, kind, listing.resource_version):
        event.type, event.object                                   # ADDED/MODIFIED/DELETED/BOOKMARK
    await api.close()

Leases (``coordination.k8s.io/v1``), Events (``v1``) and our CRDs are in the built-in
path table; other kinds are found by discovery.  A watch whose resourceVersion is too
old raises :class:`GoneError` (relist).  Tests use :class:`tests.kits.fake_kube.FakeKube`.

Modules: ``objects`` (Object, ObjectRef, event/owner bodies), ``errors`` (the tree),
``protocol`` (KubeReader, KubeWriter, Kube, KubeWatcher, KubeController, Listing,
WatchEvent), ``credentials`` (kubeconfig, in-cluster), ``transport`` (paths, TLS,
decoding), ``ratelimit`` (RateLimit, the token bucket, ``--kube-api-qps/--kube-api-burst``),
``http`` (KubeHttp, aiohttp), ``testing`` (FakeKube).
"""

from kubeapi.credentials import Credentials, CredentialsError
from kubeapi.credentials import load as load_credentials
from kubeapi.errors import (
    ApiError,
    ConflictError,
    ForbiddenError,
    GoneError,
    NotFoundError,
    TransientError,
    error_for_status,
)
from kubeapi.objects import Object, ObjectRef, event_body, owner_reference, timestamp
from kubeapi.protocol import (
    Kube,
    KubeController,
    KubeReader,
    KubeWatcher,
    KubeWriter,
    Listing,
    WatchEvent,
)
from kubeapi.ratelimit import RateLimit

__all__ = [
    "ApiError",
    "ConflictError",
    "Credentials",
    "CredentialsError",
    "ForbiddenError",
    "GoneError",
    "Kube",
    "KubeController",
    "KubeReader",
    "KubeWatcher",
    "KubeWriter",
    "Listing",
    "NotFoundError",
    "Object",
    "ObjectRef",
    "RateLimit",
    "TransientError",
    "WatchEvent",
    "error_for_status",
    "event_body",
    "load_credentials",
    "owner_reference",
    "timestamp",
]
