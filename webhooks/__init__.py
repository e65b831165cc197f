"""Admission webhooks: PodGroups, Queues and GPU-sharing pods are checked before storage.

Why this package exists: the CRD schemas check types, not structure. A PodGroup whose
subgroups form a cycle, or a Queue whose parent is missing, would be stored and then
leave the scheduler unable to place anything; a pod asking for 1.5 of a GPU would wait
forever. ``validation`` (PodGroups, Queues) and ``pods`` (the GPU-sharing annotations)
hold the rules as pure functions, ``podenv`` and ``gating`` the pod mutations (GPU env
wiring; the queue admission gate on new pods), ``server`` the HTTPS edge (``podmuster
run webhooks``), ``flags`` its command line. The package depends on the API models
(``crds``) and the shared client (``kubeapi``) only: never on the scheduler, the
podgrouper or the adapters.
"""
