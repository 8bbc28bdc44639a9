"""python -m seer.trace: explain a profiler trace kernel by kernel (augment, summary, diff)."""
