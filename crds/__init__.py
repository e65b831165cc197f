"""podmuster's API layer: KAI's CRDs, typed models, quantities and input loading.

This is the lowest layer of the product (it imports nothing else of ours):

* :mod:`crds.podgroup`, :mod:`crds.queue`, :mod:`crds.bindrequest`,
  :mod:`crds.topology` — pydantic models with KAI's field names, plus KAI's
  code defaults as helpers and its special values as constants: the one
  definition of the API;
* ``crds/*.yaml`` — CRD manifests for PodGroup, Queue, BindRequest, Topology,
  written from the models by :mod:`crds.generate` (``make crds``);
* :mod:`crds.quantities` — exact Kubernetes quantities;
* :mod:`crds.documents` and :mod:`crds.errors` — reading objects on input and
  the one-line :class:`~crds.errors.InputError`.

The package re-exports nothing: import names from the module that defines them.
"""
