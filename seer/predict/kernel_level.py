"""Memory-bound kernels at kernel level for the workloads (seer.workload.estimate): the GPU's
kernel line (floor and effective bandwidth) from the bundled kernel floors, fitted on traces or
moved to the GPU through its spec (seer.models.kernel_floor)."""

from __future__ import annotations

from seer.hardware.gpus import GPUSpec
from seer.models.kernel_floor import KernelFloors, KernelLine, bundled

__all__ = ["KernelFloors", "KernelLine", "kernel_line"]


def kernel_line(gpu: GPUSpec, floors: KernelFloors | None = None) -> KernelLine | None:
    """The GPU's kernel line from `floors` (default: the bundled ones); None where none was fitted."""
    floors = bundled() if floors is None else floors
    return floors.line(gpu) if floors.lines else None
