"""Module sizes and the largest functions of seer/ and cudnn_bench/ (a maintainer's gauge).

python tools/code_size.py [--top N] [ROOT ...]: lines per module (non-blank), and the N longest
functions or methods with their line counts.
"""
from __future__ import annotations

import argparse
import ast
from pathlib import Path


def functions(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append((node.end_lineno - node.lineno + 1, f"{path}:{node.lineno} {node.name}"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("roots", nargs="*", default=["seer", "cudnn_bench"])
    ap.add_argument("--top", type=int, default=15)
    args = ap.parse_args()
    files = sorted(p for r in args.roots for p in Path(r).rglob("*.py"))
    sizes = [(sum(1 for ln in p.read_text().splitlines() if ln.strip()), str(p)) for p in files]
    print(f"{len(files)} modules, {sum(n for n, _ in sizes)} non-blank lines; largest modules:")
    for n, p in sorted(sizes, reverse=True)[: args.top]:
        print(f"  {n:5d}  {p}")
    funcs = sorted((f for p in files for f in functions(p)), reverse=True)
    print(f"{len(funcs)} functions; longest:")
    for n, name in funcs[: args.top]:
        print(f"  {n:5d}  {name}")


if __name__ == "__main__":
    main()
