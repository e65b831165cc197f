"""What every ``podmuster run`` process shares: its flags, logs, leader election and
its ``/metrics``, ``/healthz`` and ``/readyz`` endpoints.

Why this package exists: the podgrouper, the scheduler, the binder, the controllers,
the node-scale-adjuster, the webhooks and ``podmuster run all`` are separate components
that must not import one another, yet an operator expects them to take the same flags
and behave alike. It depends on the client package (:mod:`kubeapi`) and
``prometheus_client`` only, so every component can use it.
"""
