"""The math families the harness measures, each recorded as its own variant family, and the
element dtype of each: the planner, the runners and both library bindings read this table."""

from __future__ import annotations

# fma: FP32 without TF32 (SEER's setting); tf32: FP32 data on TF32 tensor cores; fp16, bf16.
MATH_DTYPE: dict[str, str] = {"fma": "float32", "tf32": "float32", "fp16": "float16", "bf16": "bfloat16"}
MATHS = tuple(MATH_DTYPE)
