#!/usr/bin/env python3
"""Checks the #includes of src/ (and python/bindings/) against the layering rules.

    python3 tools/check_layers.py            # violations not in the expectations file, and
                                             # listed ones that are gone; exit 1 if any
    python3 tools/check_layers.py --all      # every violation, listed or not
    python3 tools/check_layers.py --graph    # the folder graph: "from -> to  (count)"

The rules (docs/architecture.md, "Layers") are the tables below:

  1. Layers point one way: python/bindings -> trace -> scheduler -> mlir_lowering -> runtime ->
     base. A file includes its own layer's files and lower layers' files, never a higher one's.
  2. MLIR and LLVM headers belong to the compiler: only mlir_lowering/ (and python/bindings,
     which calls the JIT's self-test) include them, also through the project headers they
     include.
  3. The compiler core (the trn dialect and its passes, the host pipeline, JIT and object
     checks: COMPILER below) includes no torch header (ATen, c10, torch) and none of the
     torch-facing front (group lowering, the op emitters), also through the project headers it
     includes.
  4. The base (src/base/: knobs, log, stats, profiler, source table, blocking hooks, error
     kinds; BASE below) includes no torch, MLIR or LLVM header and no other project file than
     the base's own, also through the project headers it includes.

A known violation is listed in tools/layering_expectations.txt, one a line, as
`RULE FILE -> INCLUDED  # reason`. The check fails on a violation not listed and on a listed
one that no longer occurs, so the list stays true: remove a line when its violation is fixed.
"""
from __future__ import annotations

import argparse
import fnmatch
import os
import re
import sys
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXPECTATIONS = os.path.join(ROOT, "tools", "layering_expectations.txt")

# Highest first. A file's layer is the first folder of its path under src/ (python/bindings is
# the pybind11 edge, above everything).
LAYERS = ["python/bindings", "trace", "scheduler", "mlir_lowering", "runtime", "base"]

COMPILER = [
    "mlir_lowering/trn/*",
    "mlir_lowering/host_jit.*", "mlir_lowering/host_passes.*", "mlir_lowering/host_pipeline.*",
    "mlir_lowering/ir_module.*", "mlir_lowering/llvm_optimize.*", "mlir_lowering/object_check.*",
    "mlir_lowering/parallel_passes.*", "mlir_lowering/trn_compile.*",
]
# The torch-facing front of mlir_lowering: what the compiler core must not include.
FRONT = [
    "mlir_lowering/group_lowering.*", "mlir_lowering/group_replay.*", "mlir_lowering/group_views.*",
    "mlir_lowering/lowering_registry.*", "mlir_lowering/ir_builder.*", "mlir_lowering/ir_emitter.*",
    "mlir_lowering/ir_internal.*", "mlir_lowering/ir_value.*", "mlir_lowering/ops/*",
]
BASE = ["base/*"]
MLIR_LAYERS = {"python/bindings", "mlir_lowering"}

TORCH_HEADERS = ("ATen/", "c10/", "torch/")
MLIR_HEADERS = ("mlir/", "llvm/", "llvm-c/", "mlir-c/")
SOURCE_EXTS = (".h", ".hpp", ".cpp", ".cc", ".inc")
_INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')


def matches(path: str, patterns) -> bool:
    return any(fnmatch.fnmatchcase(path, p) for p in patterns)


def layer_of(path: str) -> str | None:
    for layer in LAYERS:
        if path == layer or path.startswith(layer + "/"):
            return layer
    return None


def scan(root: str = ROOT) -> dict:
    """{file: [included path, ...]}: every source file of src/ (as "trace/x.cpp") and
    python/bindings/ (as "python/bindings/x.cpp") with its #include targets, in order."""
    files = {}
    for top, prefix in (("src", ""), ("python/bindings", "python/bindings/")):
        base = os.path.join(root, top)
        for d, dirs, names in os.walk(base):
            dirs.sort()
            for name in sorted(names):
                if not name.endswith(SOURCE_EXTS):
                    continue
                full = os.path.join(d, name)
                rel = prefix + os.path.relpath(full, base).replace(os.sep, "/")
                with open(full, errors="replace") as f:
                    files[rel] = [m.group(2) for m in map(_INCLUDE.match, f) if m]
    return files


def project_target(include: str, files: dict) -> str | None:
    """The project file an include names ("base/knobs.h", "python/bindings/edge.h"), else None."""
    return include if include in files else None


def closure(path: str, files: dict, memo: dict) -> dict:
    """{included path: chain}: every include reachable from `path` through project headers, each
    with the chain of project files that leads to it (for the message)."""
    if path in memo:
        return memo[path]
    memo[path] = {}
    out = {}
    for inc in files.get(path, ()):
        out.setdefault(inc, [path])
        target = project_target(inc, files)
        if target is not None:
            for deeper, chain in closure(target, files, memo).items():
                out.setdefault(deeper, [path] + chain)
    memo[path] = out
    return out


def violations(files: dict) -> dict:
    """{(rule, file, included): message} for every violation of the rules."""
    found = {}
    memo = {}
    for path in sorted(files):
        layer = layer_of(path)
        if layer is None:
            found[("layer", path, "-")] = (
                f"{path}: its folder has no layer; add it to LAYERS in tools/check_layers.py "
                "and to docs/architecture.md")
            continue
        for inc in files[path]:
            target = project_target(inc, files)
            if target is not None:
                tl = layer_of(target)
                if tl is not None and LAYERS.index(tl) < LAYERS.index(layer):
                    found[("layer", path, inc)] = f"{path} ({layer}) includes {inc} ({tl}, a higher layer)"
        compiler, base = matches(path, COMPILER), matches(path, BASE)
        for inc, chain in closure(path, files, memo).items():
            via = "" if len(chain) == 1 else " via " + " -> ".join(chain[1:])
            if inc.startswith(MLIR_HEADERS) and layer not in MLIR_LAYERS:
                found[("mlir", path, inc)] = f"{path} ({layer}) includes the MLIR/LLVM header {inc}{via}"
            target = project_target(inc, files)
            if compiler:
                if inc.startswith(TORCH_HEADERS):
                    found[("compiler", path, inc)] = f"{path} (compiler) includes the torch header {inc}{via}"
                elif target is not None and matches(target, FRONT):
                    found[("compiler", path, inc)] = f"{path} (compiler) includes the torch-facing {inc}{via}"
            if base:
                if inc.startswith(TORCH_HEADERS + MLIR_HEADERS):
                    found[("base", path, inc)] = f"{path} (base) includes {inc}{via}"
                elif target is not None and not matches(target, BASE):
                    found[("base", path, inc)] = f"{path} (base) includes {inc}, which is not base{via}"
    return found


def read_expectations(path: str = EXPECTATIONS) -> dict:
    """{(rule, file, included): reason} of the expectations file; ValueError on a bad line."""
    out = {}
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for n, line in enumerate(f, 1):
            text = line.split("#", 1)
            body, reason = text[0].strip(), (text[1].strip() if len(text) > 1 else "")
            if not body:
                continue
            m = re.fullmatch(r"(\w+)\s+(\S+)\s+->\s+(\S+)", body)
            if not m or not reason:
                raise ValueError(f"{path}:{n}: expected `RULE FILE -> INCLUDED  # reason`, got {line.rstrip()!r}")
            out[(m.group(1), m.group(2), m.group(3))] = reason
    return out


def check(root: str = ROOT, expectations: str = EXPECTATIONS) -> tuple[list, list, dict]:
    """(new violations' messages, stale expectation lines, every violation)."""
    found = violations(scan(root))
    expected = read_expectations(expectations)
    new = [msg for key, msg in sorted(found.items()) if key not in expected]
    stale = [f"{r} {f} -> {i}  # {why}" for (r, f, i), why in sorted(expected.items()) if (r, f, i) not in found]
    return new, stale, found


def folder_graph(files: dict) -> Counter:
    """(from folder, to folder) -> number of includes, over project files (folders two deep)."""
    def folder(p):
        parts = p.split("/")
        depth = 2 if p.startswith("python/") else 1
        return "/".join(parts[:depth + (1 if len(parts) > depth + 1 else 0)])
    graph = Counter()
    for path, incs in files.items():
        for inc in incs:
            if project_target(inc, files) is not None and folder(path) != folder(inc):
                graph[(folder(path), folder(inc))] += 1
    return graph


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--all", action="store_true", help="print every violation, listed or not")
    p.add_argument("--graph", action="store_true", help="print the folder include graph")
    a = p.parse_args(argv)
    if a.graph:
        for (src, dst), n in sorted(folder_graph(scan()).items()):
            print(f"{src} -> {dst}  ({n})")
        return 0
    new, stale, found = check()
    if a.all:
        for key, msg in sorted(found.items()):
            print(f"{key[0]}: {msg}")
    for msg in new:
        print(f"NEW violation: {msg}")
    for line in stale:
        print(f"FIXED (remove from tools/layering_expectations.txt): {line}")
    files = scan()
    print(f"{len(files)} files, {sum(map(len, files.values()))} includes: {len(found)} violations, "
          f"{len(found) - len(new)} of them known; {len(new)} new, {len(stale)} listed but gone")
    return 1 if new or stale else 0


if __name__ == "__main__":
    sys.exit(main())
