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
  the one-line :class:`InputError`.

The names below are the stable entry points; the kind modules are imported as
modules (``from crds import podgroup``).
"""

from typing import TYPE_CHECKING, Any

from crds.documents import SourcedObject, default_creation_timestamp, default_uid, load_documents
from crds.errors import InputError, describe_object, format_field_path, object_error
from crds.quantities import QuantityError, milli_value, parse_quantity, value

if TYPE_CHECKING:
    from crds.bindrequest import BindRequest
    from crds.podgroup import PodGroup
    from crds.queue import Queue
    from crds.topology import Topology

# The pydantic models load on first use: the scheduler and the CLI never need
# them, and importing pydantic costs a noticeable part of a command's start-up.
_MODELS = {
    "BindRequest": "crds.bindrequest",
    "PodGroup": "crds.podgroup",
    "Queue": "crds.queue",
    "Topology": "crds.topology",
}


def __getattr__(name: str) -> Any:
    module = _MODELS.get(name)
    if module is None:
        raise AttributeError(f"module 'crds' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "BindRequest",
    "InputError",
    "PodGroup",
    "QuantityError",
    "Queue",
    "SourcedObject",
    "Topology",
    "default_creation_timestamp",
    "default_uid",
    "describe_object",
    "format_field_path",
    "load_documents",
    "milli_value",
    "object_error",
    "parse_quantity",
    "value",
]
