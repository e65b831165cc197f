"""The live podgrouper: pods in, KAI-compatible PodGroups and pod labels out.

Layers inside the package (only ``handlers`` and ``cli`` touch the network or import
kopf; the client is the shared :mod:`kubeapi` package; the facade below imports none of
them):

* ``kube`` — the narrow async API (``KubeReader``, ``KubeWriter``) and its error tree,
  from :mod:`kubeapi`; ``testing`` — ``FakeKube``, the in-memory implementation for tests;
* ``owners`` — top-owner walk; ``lookups`` — related objects for adapters;
  ``applying`` — PodGroup create/update and the pod patch;
  ``reconciling`` — one pod's reconcile and its error policy;
* ``settings``, ``selectors`` — validated configuration; ``adapters`` — user adapters
  from the ``podmuster.adapters`` entry point;
* ``handlers`` — kopf pod handlers; ``cli`` — ``podmuster run podgrouper``.
"""

from podgrouper.adapters import ENTRY_POINT_GROUP, AdapterError, build_registry, load_adapters
from podgrouper.applying import Applied, Write, apply
from podgrouper.kube import (
    ApiError,
    ConflictError,
    ForbiddenError,
    Kube,
    KubeReader,
    KubeWriter,
    NotFoundError,
    ObjectRef,
    TransientError,
)
from podgrouper.owners import OwnerChain, OwnerError, resolve_owners
from podgrouper.reconciling import Outcome, RetryableError, reconcile_pod
from podgrouper.selectors import LabelSelector, SelectorError
from podgrouper.settings import PodGrouperSettings

__all__ = [
    "ENTRY_POINT_GROUP",
    "AdapterError",
    "ApiError",
    "Applied",
    "ConflictError",
    "ForbiddenError",
    "Kube",
    "KubeReader",
    "KubeWriter",
    "LabelSelector",
    "NotFoundError",
    "ObjectRef",
    "Outcome",
    "OwnerChain",
    "OwnerError",
    "PodGrouperSettings",
    "RetryableError",
    "SelectorError",
    "TransientError",
    "Write",
    "apply",
    "build_registry",
    "load_adapters",
    "reconcile_pod",
    "resolve_owners",
]
