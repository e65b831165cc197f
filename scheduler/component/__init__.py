"""The runtime the live components share, so that no component imports another.

The scheduler (:mod:`scheduler.live`), the binder, the status controllers and the scale
adjuster are separate components; what they have in common lives here: ``flags`` (the
shared command-line flags), ``process`` (identity, signals, log format), ``leader``
(Lease leader election), ``fencing`` (no writes once the lease may be lost), ``runtime``
(serve a controller body under all of that), ``watching`` and ``workqueue`` (the
informer store and the rate-limited work queue the controllers reconcile from).
"""
