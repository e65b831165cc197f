"""Framework adapters: pure functions from workloads to KAI-compatible PodGroups.

Layers inside the package (no Kubernetes client, no kopf, no I/O):

* ``base`` — values (``PodGroupSpec``, ``GroupingContext``) and protocols
  (``WorkloadGrouper``, ``ObjectLookup``); ``fields`` and ``resolution`` — shared rules;
* one module per framework family (``k8s``, ``kubeflow``, ``ray``, ``jobset``, ``lws``,
  ``knative``, ``argo``, ``trainer``, ``spark``), composed from ``default``;
* ``registry`` — the GVK table (``BUILTIN``) and ``build_registry``;
* ``templates``/``synthesis`` — the pods controllers would create;
* ``objects``/``grouping`` — offline grouping (``group_workloads``);
* ``updates`` — sticky fields on update and the pod patch, for the podgrouper.

Import names from the module that defines them; this package re-exports nothing.
"""
