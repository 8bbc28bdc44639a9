"""Memory-bound kernels at kernel level for the workloads (seer.workload.estimate): the GPU's
kernel line (floor and effective bandwidth) from the bundled kernel floors, fitted on traces or
moved to the GPU through its spec (seer.models.kernel_floor)."""

from __future__ import annotations

from seer.models.kernel_floor import KernelFloors, KernelLine, bundled

__all__ = ["KernelFloors", "KernelLine", "bundled", "kernel_floors"]


def kernel_floors(floors: KernelFloors | None = None) -> KernelFloors | None:
    """`floors` (default: the bundled ones), None where no GPU's line was fitted."""
    floors = bundled() if floors is None else floors
    return floors if floors.lines else None
