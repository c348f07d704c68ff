#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks that the library's objects obey the layer order written in src/README.md.

Usage: layers.py SRC_README OBJECT... [--optional FILE.c] [--graph]

OBJECT is an object file of the library (name.c.o) or a directory holding them; an
argument may hold several, separated by ';' (CMake's $<TARGET_OBJECTS:...>). A file
named with --optional may be listed without being built (a build option left it out).

src/README.md lists every source file of the library, lowest layer first, as a numbered
list ("1. `os.c`: ..."). A file may call only files listed before it: for every object,
each undefined symbol that another object of the library defines must be defined by an
object earlier in the list. `nm` tells who defines and who uses what, so the check sees
the calls the compiler really emitted (inline functions from headers included: those
are compiled into the caller and do not count). Exit 1 on any violation, on a source
file missing from the list, or on a listed file that has no object.

--graph prints the object dependency graph and its strongly connected components (the
"tangle": groups of files that call each other), for the record, and exits 0.
"""
import os
import re
import subprocess
import sys


def layer_order(readme):
    order = []
    for line in open(readme, encoding="utf-8"):
        m = re.match(r"\s*\d+\.\s+`([A-Za-z0-9_]+\.c)`", line)
        if m:
            order.append(m.group(1))
    return order


def symbols(obj):
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            undefined.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBRVWtdbrvwiu" and parts[1].isupper():
            defined.add(parts[2])
        elif len(parts) == 3 and parts[1] in ("W", "V", "i", "u"):
            defined.add(parts[2])
    return defined, undefined


def objects(args):
    objs = {}
    for arg in args:
        for path in filter(None, arg.split(";")):
            if os.path.isdir(path):
                for root, _, files in os.walk(path):
                    for f in files:
                        if f.endswith(".c.o"):
                            objs[f[:-2]] = os.path.join(root, f)
            elif path.endswith(".c.o"):
                objs[os.path.basename(path)[:-2]] = path
    return objs


def edges(objs):
    defs, uses = {}, {}
    for name, path in objs.items():
        d, u = symbols(path)
        uses[name] = u
        for s in d:
            defs.setdefault(s, name)
    graph = {name: {} for name in objs}
    for name, u in uses.items():
        for s in u:
            d = defs.get(s)
            if d is not None and d != name:
                graph[name].setdefault(d, []).append(s)
    return graph


def tangles(graph):
    """Strongly connected components with more than one file (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    args = sys.argv[2:]
    optional = set()
    while "--optional" in args:
        k = args.index("--optional")
        optional.add(args[k + 1])
        del args[k:k + 2]
    readme = sys.argv[1]
    objs = objects([a for a in args if a != "--graph"])
    graph = edges(objs)
    if "--graph" in sys.argv:
        for v in sorted(graph):
            print(f"{v}: {' '.join(sorted(graph[v]))}")
        for comp in tangles(graph):
            print(f"tangle ({len(comp)} files): {' '.join(comp)}")
        return 0
    order = layer_order(readme)
    rank = {f: i for i, f in enumerate(order)}
    problems = []
    for f in sorted(objs):
        if f not in rank:
            problems.append(f"{f}: not in the layer order of {readme}")
    for f in order:
        if f not in objs and f not in optional:
            problems.append(f"{f}: listed in the layer order but not built")
    for user in sorted(graph):
        for used, syms in sorted(graph[user].items()):
            if user in rank and used in rank and rank[used] >= rank[user]:
                problems.append(f"{user} calls up into {used} ({', '.join(sorted(syms)[:4])})")
    for p in problems:
        print(p)
    deps = sum(len(g) for g in graph.values())
    print(f"{len(objs)} objects, {len(order)} files in the order, {deps} file-to-file dependencies, "
          f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
