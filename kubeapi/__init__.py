"""kubeapi: the small Kubernetes client every podmuster component shares.

Why this package exists: the podgrouper, the scheduler and the binder each need a few
dozen API calls; one narrow, typed, async surface (protocols + one aiohttp
implementation + one in-memory fake) keeps HTTP details and library exceptions out of
them.  This package imports nothing of ours; only :mod:`kubeapi.http` imports aiohttp,
and importing the package loads nothing else.

API (all coroutines, all raising :mod:`kubeapi.errors`)::

    from kubeapi.credentials import load as load_credentials
    from kubeapi.ratelimit import RateLimit
    creds = load_credentials(kubeconfig="", context="")   # or in-cluster
    from kubeapi.http import KubeHttp
    api = KubeHttp(creds, component="podmuster-scheduler",         # KubeController
                   rate_limit=RateLimit(qps=50, burst=300)) # optional; None: unlimited
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
old raises :class:`~kubeapi.errors.GoneError` (relist).  Tests use an in-memory
fake, :class:`tests.kits.fake_kube.FakeKube`.

Modules: ``objects`` (Object, ObjectRef, event/owner bodies), ``errors`` (the tree),
``protocol`` (KubeReader, KubeWriter, Kube, KubeWatcher, KubeController, Listing,
WatchEvent), ``credentials`` (kubeconfig, in-cluster), ``execauth`` (exec credential plugins),
``authprovider`` (oidc/gcp/azure cached tokens), ``kubeconfigs`` (``$KUBECONFIG``
merge), ``transport`` (paths, TLS,
decoding), ``ratelimit`` (RateLimit, the token bucket, ``--kube-api-qps/--kube-api-burst``),
``http`` (KubeHttp, aiohttp). The package re-exports nothing: import from these modules.
"""
