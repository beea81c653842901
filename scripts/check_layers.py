#!/usr/bin/env python3
"""Check csrc/ against its declared layers: includes, calls, cycles, size.

Every C, CUDA and header file of csrc/ lives in a layer folder; the files
directly in csrc/ (the module init) make the top layer, "module".  A file
may include files, call functions and use global data of its own layer and
of the layers below, never of a layer above nor of another layer at its
own level.  No chain of includes comes back to its file, no chain of
includes and calls to its folder; no folder holds over 25% of the lines.

  python scripts/check_layers.py [--graph] [--calls] [--folders] [--lines]
                                 [--csrc DIR]

Prints the include edges, the uses across folders, the folder graph, each
folder's share of the lines if asked; then each violation and a summary,
and exits 1 if there is any.  A quoted include is looked up next to the
including file, then from csrc/; one found in neither is not ours.

Calls are read from the text, so the check runs before any build.  With
comments and literals out and the macros called at column 0 expanded, the
file-level definitions the linker sees (not static, inline, templates or
on the device alone; no prototype, no extern declaration) make the symbol
table.  Any other name in a file that names a symbol of another file is a
use, in a header too (its inline functions and macros; counted for the
header's folder).  A name after `.` or `->` is a member, a prototype is no
use, and a file's static names hide others of the same name.
"""
import argparse
import collections
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CSRC = os.path.join(ROOT, "csrc")

TOP = "module"  # the files directly in csrc/
# Lowest first.  Layers of one rank may not include or call each other;
# a folder listed here that does not exist is simply empty.
LAYERS = {
    "kernels": 0,   # CUDA C and its contract with C: no Python
    "core": 1,      # dtype, Size, arguments, Device, the Tensor layout
    "memory": 2,    # caching allocator, backends, Storage, new tensors
    "cpu": 3,       # CPU loops and the CPU rows of the dispatch table
    "cuda": 3,      # CUDA runtime, cuBLAS/cuBLASLt, the CUDA rows
    "ops": 4,       # the op front ends that compute
    "autograd": 5,  # the backward graph: nodes, rules, engine, grad mode
    "interop": 5,   # DLPack and the CUDA array interface
    "dist": 5,      # collectives: NCCL loaded at run time, NcclComm
    "tensor": 6,    # the Tensor type: slots, methods, creation, views
    TOP: 7,         # csrc/module.c: the module init, may call anything
}
SHARE = 0.25  # the most of csrc's lines one folder may hold
SOURCES = (".c", ".h", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
NOISE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"'
                   r"|'(?:\\.|[^'\\\n])*'", re.S)
DIRECTIVE = re.compile(r"^[ \t]*#[^\n]*", re.M)
DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)(\([^)]*\))?(.*)",
                    re.M)
NAME = re.compile(r"\b[A-Za-z_]\w*")
TOKEN = re.compile(r"(?:(\.|->)\s*)?\b([A-Za-z_]\w*)")
POINTER = re.compile(r"\(\s*\*\s*([A-Za-z_]\w*)\s*(?:\[[^]]*\]\s*)*\)")
# Specifiers that keep a definition from the linker, and those that in
# CUDA leave it on the device alone.
LOCAL = {"static", "inline", "__forceinline__", "constexpr", "template"}
DEVICE = {"__device__", "__constant__", "__shared__"}
TAGS = ("struct", "union", "enum")


def layer_of(rel):
    parts = rel.split(os.sep)
    if len(parts) == 1:
        return TOP
    return parts[0] if parts[0] in LAYERS and parts[0] != TOP else None


def strip(text):
    """text with its lines spliced, without comments, and with empty
    string and char literals."""
    def blank(m):
        return m[0][0] * 2 if m[0][0] in "\"'" else " "
    return NOISE.sub(blank, text.replace("\\\n", ""))


def internal(specifiers, cuda):
    """Whether a definition with these specifiers stays out of the
    linker's sight (in C++, a const object at file level does too)."""
    words = set(NAME.findall(specifiers))
    if words & LOCAL or cuda and "__host__" not in words and words & DEVICE:
        return True
    return cuda and "const" in words and "extern" not in words


def named_call(text):
    """(name, what precedes it) for text ending in a parameter list."""
    depth = 0
    for k in range(len(text.rstrip()) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(text[k], 0)
        if depth == 0 and text[k] == "(":
            m = re.search(r"([A-Za-z_]\w*)\s*$", text[:k])
            return (m[1], text[:m.start()]) if m else (None, text[:k])
    return None, text


def split_top(text, start=0, sep=","):
    """(parts, end): text from start cut at each sep outside brackets, up
    to the first unmatched closing bracket, and the index past it."""
    parts, depth, last = [], 0, start
    for k in range(start, len(text)):
        c = text[k]
        if c in ")]}" and depth == 0:
            return parts + [text[last:k]], k + 1
        depth += 1 if c in "([{" else -1 if c in ")]}" else 0
        if c == sep and depth == 0:
            parts.append(text[last:k])
            last = k + 1
    return parts + [text[last:]], len(text)


def macros(text, table):
    """table, {name: (parameters, body)}, with the macros of text added;
    an object-like macro has None for parameters, and its bodies under
    different #if branches are joined."""
    for name, params, body in DEFINE.findall(text):
        if params:
            table[name] = ([p.strip() for p in params[1:-1].split(",")], body)
        else:
            table[name] = (None, table.get(name, (0, ""))[1] + " " + body)
    return table


def expand(code, table, nested=0):
    """code with the function-like macros of table expanded where called
    at column 0 (at file level, in this style), and again within what
    they expand to; a # argument becomes an empty string."""
    out, pos = [], 0
    for m in re.finditer(r"\b(\w+)\s*\(" if nested else r"^(\w+)\s*\(",
                         code, re.M):
        params, body = table.get(m[1], (None, ""))
        if m.start() < pos or params is None or nested > 8:
            continue
        args, end = split_top(code, m.end())
        if params[-1] == "...":
            n = len(params) - 1
            params = params[:n] + ["__VA_ARGS__"]
            args = args[:n] + [",".join(args[n:])]
        values = dict(zip(params, (a.strip() for a in args)))
        body = re.sub(r"#\s*\w+", '""', re.sub(r"\s*##\s*", "\0", body))
        body = NAME.sub(lambda w: values.get(w[0], w[0]), body)
        out += [code[pos:m.start()],
                expand(body.replace("\0", ""), table, nested + 1)]
        pos = end
    return "".join(out) + code[pos:]


def declaration(stmt):
    """(variables, prototypes) of a file-level statement ending in ';'."""
    variables, prototypes = [], []
    for k, part in enumerate(split_top(stmt)[0]):
        part = split_top(part, sep="=")[0][0]
        name = named_call(part)[0] if part.rstrip().endswith(")") else None
        body, _, rest = part.rpartition("}")
        found = NAME.findall(re.sub(r"\[[^]]*\]", "", rest))
        if name:
            prototypes.append(name)
        elif POINTER.search(part):
            variables.append(POINTER.search(part)[1])
        elif body or k or len(found) > 1 and found[-2] not in TAGS:
            variables += found[-1:]                 # not `struct tag;`
    return variables, prototypes


def scan(code, cuda):
    """(defined, local, spans): the names code (without directives)
    defines for the linker, its file-local names, and the spans of its
    prototypes, extern declarations and typedefs, which are no uses."""
    defined, local, spans = set(), set(), []
    pieces, begin, start, depth, blocks = [], 0, 0, 0, []
    for m in re.finditer(r"[{};]", code):
        c, at = m[0], m.start()
        if depth:
            depth += {"{": 1, "}": -1}.get(c, 0)
            if depth == 0:
                start = m.end()
                begin = begin if pieces else start
            continue
        text = "".join(pieces) + code[start:at]
        words = NAME.findall(re.split(r"[(=]", text, 1)[0])
        hidden = any(blocks)                        # anonymous namespace
        if c == "{" and (re.fullmatch(r'\s*extern\s*""\s*', text)
                         or words[:1] == ["namespace"]):
            blocks.append(len(words) == 1)
        elif c == "{" and not pieces and text.rstrip().endswith(")"):
            name, prefix = named_call(text)         # a function definition
            if name:
                private = hidden or internal(prefix, cuda)
                (local if private else defined).add(name)
            depth = 1
        elif c == "{":                              # a struct or initializer
            pieces, depth = [text + "{}"], 1
            continue
        elif c == "}":                  # an extern "C" or namespace block ends
            blocks = blocks[:-1]
        elif words[:1] == ["typedef"] or "extern" in words:
            spans.append((begin, m.end()))
        else:
            variables, prototypes = declaration(text)
            if hidden or internal(" ".join(words), cuda):
                local.update(variables + prototypes)
            else:
                defined.update(variables)
            if not variables:
                spans.append((begin, m.end()))
        pieces, begin, start = [], m.end(), m.end()
    return defined, local, spans


def read(text, cuda, table):
    """(defined, local, tokens) of a file's stripped text: what it defines
    once macros are expanded (table's and its own, and the object-like
    ones that stand for specifiers), and the names it uses."""
    table = macros(text, dict(table))
    storage = {name: body for name, (params, body) in table.items()
               if params is None and set(body.split()) & (LOCAL | DEVICE)}
    code = DIRECTIVE.sub(lambda m: " " * len(m[0]), text)
    wide = NAME.sub(lambda w: storage.get(w[0], w[0]), expand(code, table))
    defined, local, _ = scan(wide, cuda)
    for a, b in scan(code, cuda)[2]:
        text = text[:a] + " " * (b - a) + text[b:]
    text = re.sub(r"^\s*#\s*include\b[^\n]*", "", text, flags=re.M)
    tokens = {name for member, name in TOKEN.findall(text) if not member}
    return defined, local, tokens


def files():
    """{file: (includes, defined, local, tokens, lines)}, paths relative
    to CSRC, includes resolved."""
    raw, table, out = {}, {}, {}
    for d, _, names in os.walk(CSRC):
        for f in sorted(n for n in names if n.endswith(SOURCES)):
            with open(os.path.join(d, f), encoding="utf-8") as fh:
                raw[os.path.relpath(os.path.join(d, f), CSRC)] = fh.read()
    text = {f: strip(raw[f]) for f in raw}
    for f in raw:
        if f.endswith((".h", ".cuh")):
            macros(text[f], table)
    for f in sorted(raw):
        includes, d = [], os.path.join(CSRC, os.path.dirname(f))
        for name in INCLUDE.findall(raw[f]):
            for base in (d, CSRC):
                cand = os.path.normpath(os.path.join(base, name))
                if os.path.isfile(cand) and cand.startswith(CSRC + os.sep):
                    includes.append(os.path.relpath(cand, CSRC))
                    break
        cuda = f.endswith((".cu", ".cuh"))
        out[f] = (includes, *read(text[f], cuda, table), raw[f].count("\n"))
    return out


def cycles(edges, closes=lambda a, b: True):
    """Each cycle of a graph, a set of edges (a, b), once: for each edge
    that may close one, the shortest way back from its end to its start.
    A cycle is a list of nodes that ends where it starts."""
    succ, found = collections.defaultdict(list), {}
    for a, b in sorted(edges):
        succ[a].append(b)
    for a, b in filter(lambda e: closes(*e), sorted(edges)):
        back, todo = {b: None}, collections.deque([b])
        while todo and a not in back:
            n = todo.popleft()
            for m in succ[n]:
                if m not in back:
                    back[m] = n
                    todo.append(m)
        if a in back:
            path = [a]
            while path[-1] != b:
                path.append(back[path[-1]])
            cyc = [a] + path[:0:-1]                 # a -> b -> ... (-> a)
            k = cyc.index(min(cyc))
            found.setdefault(tuple(cyc[k:] + cyc[:k]), None)
    return [list(c) + [c[0]] for c in found]


def against(lf, lg):
    """Why layer lf may not use layer lg, or None."""
    if LAYERS[lg] > LAYERS[lf]:
        return f"{lf} may not {{}} {lg}, a layer above it"
    if LAYERS[lg] == LAYERS[lf] and lg != lf:
        return f"{lf} and {lg} are layers of one level"


def check(info):
    """(problems, uses, {(lf, lg): [uses, includes]}, counts of includes
    and calls against the layers)."""
    owners = collections.defaultdict(list)
    for f in sorted(info):
        for name in info[f][1]:
            owners[name].append(f)
    problems, uses, count = [], [], collections.Counter()
    folders = collections.defaultdict(lambda: [0, 0])
    for f in sorted(info):
        includes, defined, local, tokens, _ = info[f]
        lf = layer_of(f)
        if lf is None:
            names = ", ".join(layer for layer in LAYERS if layer != TOP)
            problems.append(f"{f}: not in a layer folder ({names})")
            continue
        for g in includes:
            lg = layer_of(g)
            if lg not in (None, lf):
                folders[lf, lg][1] += 1
            if lg is not None and against(lf, lg):
                count["includes"] += 1
                problems.append(f"{f} includes {g}: "
                                + against(lf, lg).format("include"))
        for name in sorted(tokens & owners.keys() - defined - local):
            gs = [g for g in owners[name] if layer_of(g) not in (None, lf)]
            bad = [g for g in gs if against(lf, layer_of(g))]
            if not gs:
                continue
            uses.append(f"{f} -> {name} ({', '.join(bad or gs)})")
            for lg in {layer_of(g) for g in bad or gs}:
                folders[lf, lg][0] += 1
            if bad:
                count["calls"] += 1
                why = against(lf, layer_of(bad[0])).format("call")
                problems.append(f"{f} calls {name} (defined in "
                                f"{', '.join(bad)}): {why}")
    return problems, uses, folders, count


def main(argv):
    global CSRC
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for flag in ("--graph", "--calls", "--folders", "--lines"):
        ap.add_argument(flag, action="store_true")
    ap.add_argument("--csrc", default=CSRC)
    args = ap.parse_args(argv)
    CSRC = os.path.abspath(args.csrc)
    info = files()
    problems, uses, folders, count = check(info)
    inc = cycles({(f, g) for f in info for g in info[f][0]})
    problems += ["include cycle: " + " -> ".join(c) for c in inc]
    # A chain that only goes down cannot come back: an edge against the
    # layers closes each folder cycle.
    fcyc = cycles(folders, lambda a, b: LAYERS[b] >= LAYERS[a])
    problems += ["folder cycle: " + " -> ".join(c) for c in fcyc]
    lines = collections.Counter()
    for f in info:
        lines[layer_of(f) or f.split(os.sep)[0]] += info[f][4]
    total = sum(lines.values()) or 1
    problems += [f"{layer}/ holds {n / total:.0%} of csrc's lines, more "
                 f"than {SHARE:.0%}" for layer, n in lines.most_common()
                 if n > SHARE * total]
    shown = []
    if args.graph:
        shown += [f"{f} -> {g}" for f in sorted(info) for g in info[f][0]]
    if args.calls:
        shown += uses
    if args.folders:
        shown += [f"{a} -> {b} {n + m} ({n} uses, {m} includes)"
                  for (a, b), (n, m) in sorted(folders.items())]
    if args.lines:
        shown += [f"{layer} {n} lines, {n / total:.1%}"
                  for layer, n in lines.most_common()]
    for line in shown + problems:
        print(line)
    print(f"{len(info)} files, {sum(len(i[0]) for i in info.values())} "
          f"includes, {len(uses)} cross-folder uses: {len(inc)} include "
          f"cycles, {len(fcyc)} folder cycles, {count['includes']} includes "
          f"against the layers, {count['calls']} calls against the layers")
    print("lines: " + ", ".join(f"{layer} {n / total:.0%}"
                                for layer, n in lines.most_common()))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
