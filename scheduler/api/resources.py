"""Resource vectors as fixed-width integer arrays.

Why: the engine compares a pod's request with every node's free capacity many
thousands of times per cycle. Keeping every quantity as an ``int64`` in a fixed
column (CPU in millicores, memory in bytes, pods, GPUs in thousandths of a
device, then one column per extended resource seen in the snapshot) turns each
check into one vectorised numpy comparison, with exact integer sums and no
float drift.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from crds.gpusharing import WHOLE_GPU_RESOURCES
from crds.rules import FRACTION_UNIT

Vector = npt.NDArray[np.int64]

CPU = 0
MEMORY = 1
PODS = 2
GPU = 3
BASE_COLUMNS = ("cpu", "memory", "pods", "gpu")

# One whole GPU in the GPU column: thousandths, so fractions (0.5, 0.25) stay exact.
GPU_UNIT = FRACTION_UNIT

# Resource names that count as whole GPUs.
GPU_RESOURCE_NAMES = WHOLE_GPU_RESOURCES

# Queue-level accounting (fair share, quota, limit) covers these three, in this order.
QUEUE_RESOURCES = ("gpu", "cpu", "memory")
QUEUE_COLUMNS = (GPU, CPU, MEMORY)


@dataclass(slots=True)
class ResourceSpace:
    """Maps resource names to columns; extended resources get columns as they are seen."""

    names: list[str] = field(default_factory=lambda: list(BASE_COLUMNS))
    _index: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._index = {name: i for i, name in enumerate(self.names)}

    @property
    def width(self) -> int:
        return len(self.names)

    def column(self, resource_name: str) -> int:
        """The column of a Kubernetes resource name, adding one for a new extended resource."""
        if resource_name in GPU_RESOURCE_NAMES:
            return GPU
        index = self._index.get(resource_name)
        if index is None:
            index = len(self.names)
            self.names.append(resource_name)
            self._index[resource_name] = index
        return index

    def find(self, resource_name: str) -> int | None:
        """The column of a resource name already seen, or None (never adds a column)."""
        if resource_name in GPU_RESOURCE_NAMES:
            return GPU
        return self._index.get(resource_name)

    def zeros(self) -> Vector:
        return np.zeros(self.width, dtype=np.int64)

    def display_name(self, column: int) -> str:
        name = self.names[column]
        return "nvidia.com/gpu" if column == GPU else name


def widen(vector: Vector, width: int) -> Vector:
    """Pad a vector built before later extended-resource columns were added."""
    if vector.shape[0] == width:
        return vector
    out = np.zeros(width, dtype=np.int64)
    out[: vector.shape[0]] = vector
    return out


def format_amount(column: int, amount: float) -> str:
    """A human-readable amount for explanations (GPUs as devices, CPU as cores)."""
    if column == GPU:
        value = amount / GPU_UNIT
        return f"{value:g}"
    if column == CPU:
        return f"{amount / 1000:g}"
    if column == MEMORY:
        return f"{amount / 2**30:.3g}Gi"
    return f"{amount:g}"


def describe(vector: Vector | Iterable[float], space: ResourceSpace) -> str:
    """``cpu=2, memory=4Gi, gpu=1`` for the non-zero columns of a vector."""
    parts = []
    for column, amount in enumerate(vector):
        if amount and column != PODS:
            parts.append(f"{space.names[column]}={format_amount(column, float(amount))}")
    return ", ".join(parts) or "nothing"


def as_mapping(vector: Vector, space: ResourceSpace) -> Mapping[str, int]:
    return {space.names[i]: int(v) for i, v in enumerate(vector) if v}
