"""Whole workloads (torch.fx graphs, profiler traces) mapped op by op to seer's predictors.

Importing the package registers every op handler: seer.workload.ops' own and the training ops of
traces (seer.workload.trace_ops: backward, optimizer, batch norm in training, pooling), so that
`seer.workload.ops.classify` knows them all whichever module is imported first.
"""

from seer.workload import trace_ops as _trace_ops  # noqa: F401
