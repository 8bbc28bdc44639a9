"""cudnn_bench: the GPU-side collection harness (pycuda, cuDNN, cuBLASLt, ncu).

Nothing here is imported by `seer`; GPU modules are imported lazily inside the functions that
need them, so that `python -m cudnn_bench` on a machine without a GPU ends with one sentence.
"""
