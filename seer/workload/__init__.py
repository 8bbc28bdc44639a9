"""Whole workloads (torch.fx graphs, profiler traces) mapped op by op to seer's predictors.

Importing the package registers every op handler: seer.workload.ops' own, the training ops of
traces (seer.workload.trace_ops: backward, optimizer, batch norm in training, pooling), the Triton
kernels of compiled models (seer.workload.triton) and the ATen ops only a captured graph has
(seer.workload.aten), so that `seer.workload.ops.classify` knows them all whichever module is
imported first.
"""

from seer.workload import aten as _aten  # noqa: F401
from seer.workload import trace_ops as _trace_ops  # noqa: F401
from seer.workload import triton as _triton  # noqa: F401
