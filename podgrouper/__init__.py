"""The live podgrouper: pods in, KAI-compatible PodGroups and pod labels out.

Layers inside the package (only ``handlers`` and ``cli`` touch the network or import
kopf; the client is the shared :mod:`kubeapi` package):

* ``kube`` — the podgrouper's Events (its source name); the API protocols and error
  tree it calls through are :mod:`kubeapi`'s;
* ``owners`` — top-owner walk; ``lookups`` — related objects for adapters;
  ``applying`` — PodGroup create/update and the pod patch;
  ``reconciling`` — one pod's reconcile and its error policy;
* ``settings``, ``selectors`` — validated configuration; ``adapters`` — user adapters
  from the ``podmuster.adapters`` entry point;
* ``handlers`` — kopf pod handlers; ``cli`` — ``podmuster run podgrouper``.
"""
