"""cudnn_bench: the GPU-side collection harness (pycuda, cuDNN, cuBLASLt, CUPTI, ncu).

Measures cuDNN's convolution algorithms (forward, backward-data, backward-filter), cuBLASLt GEMM
algorithms and PyTorch's memory-bound kernels over configuration suites and writes seer's
measurement records
(`seer.data.records`) to data/<gpu-slug>/. Nothing in `seer` imports this package; GPU libraries
and Python GPU modules are imported lazily inside the functions that need them, so that `python
-m cudnn_bench ...` on a machine without a GPU ends with one sentence and exit code 2. See
cudnn_bench/GPU_RUN.md for a GPU session's steps.

Modules: configs (a convolution, GEMM or memory-bound configuration and its key), suites (grids
as data), cost (a configuration's estimated GPU seconds), plan (what a run measures within a
budget), maths (math families and their dtypes), cudnn and cublaslt (ctypes bindings), runtime
(pycuda / driver / CuPy backends, buffers, NVML), timing (warm-up, L2 flush, events), cupti
(kernel activity records), options (what a run was asked to do), env (the GPU environment, or a
simulated one), runners (a configuration's calls on the GPU), measure (one configuration timed
into record rows), collect (the run), counters and ncu_pass (Nsight Compute), store (resumable
files), export (SEER Excel), nvtx, argtypes and cli (command-line values), oneshot (a whole
session in one device call), torch_traces, memory_ops (PyTorch's memory-bound kernels on the
harness's stream).
"""

__all__ = ["__version__"]
__version__ = "0.1.0"
