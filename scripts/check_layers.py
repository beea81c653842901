#!/usr/bin/env python3
"""Check the include graph of csrc/ against its declared layers.

Every C, CUDA and header file of csrc/ lives in a layer folder; a file may
include (#include "...") files of its own layer and of the layers below it,
never of a layer above it nor of a different layer at its own level, and
no chain of includes may come back to where it started.

  python scripts/check_layers.py [--graph] [--csrc DIR]

Prints each violation and a summary line; exits 1 if there is any.  A
quoted include is looked up next to the including file, then from csrc/;
one found in neither (a system or toolkit header) is not ours to check.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CSRC = os.path.join(ROOT, "csrc")

# Lowest first.  Layers of one rank may not include each other.
LAYERS = {
    "kernels": 0,  # CUDA C and the contract with it: no Python
    "core": 1,     # dtype, Size, arguments, Device, the Tensor layout
    "memory": 2,   # caching allocator, backends, Storage, new tensors
    "cpu": 3,      # CPU loops and the CPU rows of the dispatch table
    "cuda": 3,     # CUDA runtime, cuBLAS/cuBLASLt, the CUDA rows
    "ops": 4,      # Tensor type, op front ends, the dispatch lookup
    "dist": 5,     # collectives: NCCL loaded at run time, NcclComm
}
SOURCES = (".c", ".h", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(rel):
    top = rel.split(os.sep, 1)[0] if os.sep in rel else None
    return top if top in LAYERS else None


def graph():
    """{file: [included files]}, paths relative to CSRC."""
    edges = {}
    for d, _, files in os.walk(CSRC):
        for f in sorted(files):
            if not f.endswith(SOURCES):
                continue
            path = os.path.join(d, f)
            rel = os.path.relpath(path, CSRC)
            with open(path, encoding="utf-8") as fh:
                names = INCLUDE.findall(fh.read())
            out = []
            for name in names:
                for base in (d, CSRC):
                    cand = os.path.normpath(os.path.join(base, name))
                    if os.path.isfile(cand) and cand.startswith(CSRC + os.sep):
                        out.append(os.path.relpath(cand, CSRC))
                        break
            edges[rel] = out
    return edges


def cycles(edges):
    """Each include cycle once, as a list of files."""
    found, seen, state = [], set(), {}
    stack = []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in edges.get(n, []):
            if state.get(m) == 1:
                cyc = stack[stack.index(m):]
                key = frozenset(cyc)
                if key not in seen:
                    seen.add(key)
                    found.append(cyc + [m])
            elif state.get(m) is None:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(edges):
        if state.get(n) is None:
            visit(n)
    return found


def main(argv):
    global CSRC
    if "--csrc" in argv:
        CSRC = os.path.abspath(argv[argv.index("--csrc") + 1])
    edges = graph()
    problems = []
    for f in sorted(edges):
        lf = layer_of(f)
        if lf is None:
            problems.append(f"{f}: not in a layer folder "
                            f"({', '.join(LAYERS)})")
            continue
        for g in edges[f]:
            lg = layer_of(g)
            if lg is None or lg == lf:
                continue
            if LAYERS[lg] > LAYERS[lf]:
                problems.append(f"{f} includes {g}: {lf} may not include "
                                f"{lg}, a layer above it")
            elif LAYERS[lg] == LAYERS[lf]:
                problems.append(f"{f} includes {g}: {lf} and {lg} are "
                                f"layers of one level")
    cyc = cycles(edges)
    for c in cyc:
        problems.append("include cycle: " + " -> ".join(c))
    if "--graph" in argv:
        for f in sorted(edges):
            for g in edges[f]:
                print(f"{f} -> {g}")
    for p in problems:
        print(p)
    upward = len(problems) - len(cyc)
    print(f"{len(edges)} files, {sum(map(len, edges.values()))} includes: "
          f"{len(cyc)} cycles, {upward} includes against the layers")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
