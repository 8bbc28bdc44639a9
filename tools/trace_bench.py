"""How long `python -m seer.trace` takes on a large trace (issue 28: 200 MB in under a minute on 2 cores).

python tools/trace_bench.py                        # ~200 MB from the bundled GPT b8 H100 trace
python tools/trace_bench.py --base ../shared/datasets/traces/hta/a100_recsys_rank3_control.json.gz
python tools/trace_bench.py --mb 50 --keep big.json   # keep the synthesised trace

A real profiler trace of that size is many steps of one model, so the synthesised one is the base
trace's events repeated: each copy shifted in time past the previous one, its correlation ids,
External ids and flow ids moved past the previous copy's and its ProfilerStep#N renumbered, so
that every launch still finds its kernel and every step is its own. Metadata events (ph M) and
deviceProperties appear once. Then `summary` and `augment` run as a user runs them (a fresh
`python -m seer.trace` process each, so imports count), and their wall times are printed.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASE = ROOT / "data" / "h100-sxm" / "traces" / "gpt_b8.pt.trace.json.gz"
STEP = "ProfilerStep#"


def _load(path: Path) -> dict:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def _shifted(e: dict, k: int, dt: float, ids: dict[str, int], steps: int) -> dict:
    """Copy k of one event: its time moved by k * dt, its ids by k * (the largest id of each kind + 1)."""
    e = dict(e)
    if "ts" in e:
        e["ts"] = float(e["ts"]) + k * dt
    if "id" in e and isinstance(e["id"], int):
        e["id"] += k * ids["flow"]
    args = e.get("args")
    if isinstance(args, dict):
        args = dict(args)
        for key, kind in (("correlation", "correlation"), ("External id", "external")):
            if isinstance(args.get(key), int) and args[key] >= 0:
                args[key] += k * ids[kind]
        e["args"] = args
    name = e.get("name")
    if isinstance(name, str) and name.startswith(STEP) and name[len(STEP) :].isdigit():
        e["name"] = f"{STEP}{int(name[len(STEP) :]) + k * steps}"
    return e


def synthesise(base: Path, mb: float, out: Path) -> tuple[int, int]:
    """Write about `mb` MB (uncompressed JSON) of `base`'s events repeated; (copies, events)."""
    doc = _load(base)
    events = [e for e in doc["traceEvents"] if isinstance(e, dict)]
    timed = [e for e in events if e.get("ph") != "M" and "ts" in e]
    start = min(float(e["ts"]) for e in timed)
    end = max(float(e["ts"]) + float(e.get("dur", 0) or 0) for e in timed)
    dt = end - start + 1000.0  # a millisecond between copies

    def biggest(key: str) -> int:
        vals = [e.get("args", {}).get(key) for e in events if isinstance(e.get("args"), dict)]
        return max([v for v in vals if isinstance(v, int)], default=0) + 1

    ids = {
        "correlation": biggest("correlation"),
        "external": biggest("External id"),
        "flow": max([e["id"] for e in events if isinstance(e.get("id"), int)], default=0) + 1,
    }
    steps = sum(1 for e in events if str(e.get("name", "")).startswith(STEP))
    size = len(json.dumps(doc))
    copies = max(1, round(mb * 1e6 / size))
    meta = [e for e in events if e.get("ph") == "M"]
    rest = [e for e in events if e.get("ph") != "M"]
    out_events = meta + [_shifted(e, k, dt, ids, steps) for k in range(copies) for e in rest]
    opener = gzip.open if out.name.endswith(".gz") else open
    with opener(out, "wt") as f:
        json.dump({**doc, "traceEvents": out_events}, f)
    return copies, len(out_events)


def _timed(argv: list[str]) -> str:
    """Wall and CPU time of one run: on a shared machine the CPU time is what the command costs."""
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "seer.trace", *argv], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    now = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = now.ru_utime - cpu.ru_utime + now.ru_stime - cpu.ru_stime
    return f"{wall:.1f} s wall, {used:.1f} s CPU"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("--base", type=Path, default=BASE, help="the trace to repeat (default: %(default)s)")
    ap.add_argument("--mb", type=float, default=200.0, help="size of the synthesised trace, MB (default: 200)")
    ap.add_argument("--keep", type=Path, help="write the synthesised trace here (default: a temporary file)")
    ap.add_argument("--gpu", help="passed to seer.trace (default: the trace's own GPU)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        big = args.keep or Path(tmp) / "big.json"
        t = time.perf_counter()
        copies, n = synthesise(args.base, args.mb, big)
        print(f"synthesised {big.stat().st_size / 1e6:.0f} MB ({copies} copies of {args.base.name}, {n} events) "
              f"in {time.perf_counter() - t:.1f} s; {os.cpu_count()} CPUs")  # fmt: skip
        gpu = ["--gpu", args.gpu] if args.gpu else []
        print(f"summary: {_timed(['summary', str(big), *gpu])}")
        print(f"augment: {_timed(['augment', str(big), *gpu, '--out', str(Path(tmp) / 'aug.json.gz')])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
