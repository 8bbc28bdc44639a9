"""python -m cudnn_bench collect ...: placeholder until the harness lands."""
import sys

print("cudnn_bench: collection is not implemented yet (see the harness issue).", file=sys.stderr)
sys.exit(2)
