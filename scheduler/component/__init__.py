"""The runtime the live components share, so that no component imports another.

The scheduler (:mod:`scheduler.live`), the binder, the status controllers and the scale
adjuster are separate components; what they have in common lives here (what the
podgrouper and the webhooks share too is in :mod:`liveprocess`: flags, logs, endpoints,
leader election and fencing): ``process`` (signals), ``runtime``
(serve a controller body under all of that), ``watching`` and ``workqueue`` (the
informer store and the rate-limited work queue the controllers reconcile from).
"""
