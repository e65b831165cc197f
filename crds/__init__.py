"""podmuster's API layer: KAI's CRDs, typed models, quantities and input loading.

This is the lowest layer of the product (it imports nothing else of ours):

* ``crds/*.yaml`` — CRD manifests for PodGroup, Queue, BindRequest, Topology;
* :mod:`crds.podgroup`, :mod:`crds.queue`, :mod:`crds.bindrequest`,
  :mod:`crds.topology` — pydantic models with KAI's field names, plus KAI's
  code defaults as helpers and its special values as constants;
* :mod:`crds.quantities` — exact Kubernetes quantities;
* :mod:`crds.documents` and :mod:`crds.errors` — reading objects on input and
  the one-line :class:`InputError`.

The names below are the stable entry points; the kind modules are imported as
modules (``from crds import podgroup``).
"""

from crds.bindrequest import BindRequest
from crds.documents import SourcedObject, default_creation_timestamp, default_uid, load_documents
from crds.errors import InputError, describe_object, format_field_path, object_error
from crds.podgroup import PodGroup
from crds.quantities import QuantityError, milli_value, parse_quantity, value
from crds.queue import Queue
from crds.topology import Topology

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
