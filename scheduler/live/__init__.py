"""The live scheduler: informers feed the engine's cache, a loop runs cycles and commits.

Why this package exists: the engine (:mod:`scheduler.cycle`, :mod:`scheduler.cache`) is a
pure function of a snapshot; this package is its edge, the only part of the scheduler
that talks to an API server (through :mod:`kubeapi`).

* ``informers`` — list-then-watch of the seven kinds into one ``ClusterCache``;
* ``committing`` — BindRequests, evictions, Pipelined events;
* ``statuses`` — ``PodScheduled=False`` and PodGroup ``schedulingConditions``;
* ``leader`` — Lease-based leader election;
* ``loop`` — the cycle loop, signals, logging; ``flags`` — ``podmuster run scheduler``.
"""
