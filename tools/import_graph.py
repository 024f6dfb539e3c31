#!/usr/bin/env python3
"""The import graph among the top-level modules ("rooms") of mlx/src.

A room is a top-level file `mlx/src/X.rs` or a folder of mlx/src (`ops`,
`ops/shape`, `backend/cpu`, ...: each folder is its own room; lib.rs, the
crate root, is not a room). On the tree at 947ae1e this gives the 23 rooms
issue 16 counted. An arrow A -> B means some file of room A names room B
through a `crate::` path (in a `use` tree or in code; the longest room that
prefixes the path wins), or a crate-root re-export defined in B
(`use crate::{Array, Result}` points at `array` and `error`). Paths through
`super::` stay inside a module and are not counted.

Layering (lowest first). An arrow is *upward* when its target sits on a
higher layer than its source; arrows within a layer are sideways and fine.

  0 base       element, dtype, error          what every value is made of
  1 storage    buffer, shape, layout,         bytes, axis and stride arithmetic,
               trace_flag                     the thread's tracing flags (a leaf)
  2 graph      array, primitive               the lazy node and the primitive trait
  3 kernels    backend                        computes a primitive's outputs
  4 nodes      primitives                     the primitive structs (state, eval, vjp)
  5 ops        ops, fft, linalg, random, fast the functions users call
  6 transforms transforms                     eval, compile, trace, autodiff
  7 files      export, io                     formats written to disk
  8 models     nn, llm                        layers and runtimes built on everything
  9 apps       bin                            programs built on the library

A folder sits on its top-level module's layer (`backend/cpu` on `backend`'s).
A module not listed sits on layer 10 (and is reported). Circles are the
strongly connected components of more than one room (each is one circle
however many rooms it holds).

Usage:
  tools/import_graph.py                   # the working tree
  tools/import_graph.py --rev 947ae1e     # a commit (read through `git show`)
  tools/import_graph.py --arrows          # also list every arrow
"""

import argparse
import os
import re
import subprocess
import sys

LAYERS = [
    ("base", ["element", "dtype", "error"]),
    ("storage", ["buffer", "shape", "layout", "trace_flag"]),
    ("graph", ["array", "primitive"]),
    ("kernels", ["backend"]),
    ("nodes", ["primitives"]),
    ("ops", ["ops", "fft", "linalg", "random", "fast"]),
    ("transforms", ["transforms"]),
    ("files", ["export", "io"]),
    ("models", ["nn", "llm"]),
    ("apps", ["bin"]),
]
LAYER_OF = {m: i for i, (_, mods) in enumerate(LAYERS) for m in mods}
UNLISTED = len(LAYERS)

SRC = "mlx/src"


class Tree:
    """The .rs files under mlx/src, from the working tree or a commit."""

    def __init__(self, root, rev):
        self.root, self.rev = root, rev

    def files(self):
        if self.rev is None:
            base = os.path.join(self.root, SRC)
            out = []
            for d, _, names in os.walk(base):
                for n in names:
                    if n.endswith(".rs"):
                        full = os.path.join(d, n)
                        out.append(os.path.relpath(full, base).replace(os.sep, "/"))
            return sorted(out)
        listing = git(self.root, "ls-tree", "-r", "--name-only", self.rev, SRC + "/")
        return sorted(p[len(SRC) + 1 :] for p in listing.splitlines() if p.endswith(".rs"))

    def read(self, rel):
        if self.rev is None:
            with open(os.path.join(self.root, SRC, rel), encoding="utf-8") as f:
                return f.read()
        return git(self.root, "show", f"{self.rev}:{SRC}/{rel}")


def git(root, *args):
    return subprocess.run(
        ["git", "-C", root, *args], check=True, capture_output=True, text=True
    ).stdout


def room_of(rel):
    """The room a file belongs to (its folder, or itself at the top), or
    None for the crate root."""
    parts = rel.split("/")
    if len(parts) == 1:
        return None if parts[0] == "lib.rs" else parts[0][:-3]
    return "/".join(parts[:-1])


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def strip_strings(text):
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', text)


def root_exports(lib_text, rooms):
    """Names the crate root re-exports, mapped to the room defining them."""
    out = {}
    for m in re.finditer(r"pub\s+use\s+([a-z_0-9]+)((?:::[A-Za-z_0-9]+)*)\s*(::\s*\{([^}]*)\}|;)", lib_text):
        room = m.group(1)
        if room not in rooms:
            continue
        if m.group(4) is not None:
            for item in m.group(4).split(","):
                name = item.strip().split(" as ")[-1].strip()
                if name:
                    out[name] = room
        else:
            path = (m.group(1) + m.group(2)).split("::")
            out[path[-1]] = room
    return out


def expand_use(tree):
    """`a::{b, c::{d as e}}` -> [[a, b], [a, c, d]]."""
    tree = tree.strip()
    brace = tree.find("{")
    if brace < 0:
        path = tree.split(" as ")[0]
        return [[p.strip() for p in path.split("::") if p.strip()]]
    prefix = [p.strip() for p in tree[:brace].split("::") if p.strip()]
    inner = tree[brace + 1 : tree.rfind("}")]
    items, cur, depth = [], "", 0
    for c in inner:
        depth += (c == "{") - (c == "}")
        if c == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += c
    items.append(cur)
    return [prefix + p for it in items if it.strip() for p in expand_use(it)]


def crate_paths(text):
    """Every path that starts at `crate::`: `use crate::..;` trees expanded,
    and paths written in code."""
    out = []
    for m in re.finditer(r"\buse\s+crate\s*::\s*([^;]*);", text):
        out += expand_use(m.group(1))
    code = re.sub(r"\buse\s+crate\s*::[^;]*;", "", text)
    for m in re.finditer(r"\bcrate\s*::\s*([A-Za-z_0-9]+(?:\s*::\s*[A-Za-z_0-9]+)*)", code):
        out.append([p.strip() for p in m.group(1).split("::")])
    return [p for p in out if p]


def target(path, rooms, exports):
    """The room a `crate::` path lands in."""
    for k in range(len(path), 0, -1):
        cand = "/".join(path[:k])
        if cand in rooms:
            return cand
    return exports.get(path[0])


def graph(tree):
    files = tree.files()
    rooms = sorted({r for f in files if (r := room_of(f))})
    lib = strip_comments(tree.read("lib.rs")) if "lib.rs" in files else ""
    exports = root_exports(lib, set(rooms))
    arrows = {}
    for f in files:
        src = room_of(f)
        if src is None:
            continue
        text = strip_strings(strip_comments(tree.read(f)))
        for path in crate_paths(text):
            dst = target(path, rooms, exports)
            if dst and dst != src:
                arrows.setdefault((src, dst), set()).add(f)
    return rooms, arrows


def circles(rooms, arrows):
    """Strongly connected components of more than one room (Tarjan)."""
    succ = {r: sorted(d for (s, d) in arrows if s == r) for r in rooms}
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in succ[v]:
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
    for r in rooms:
        if r not in index:
            visit(r)
    return sorted(out)


def layer(room):
    return LAYER_OF.get(room.split("/")[0], UNLISTED)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rev", help="a commit to read instead of the working tree")
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    ap.add_argument("--arrows", action="store_true", help="list every arrow")
    args = ap.parse_args()
    tree = Tree(os.path.abspath(args.root), args.rev)
    rooms, arrows = graph(tree)
    upward = sorted(a for a in arrows if layer(a[1]) > layer(a[0]))
    circ = circles(rooms, arrows)
    where = args.rev or "working tree"
    print(f"import graph of {SRC} ({where})")
    print(f"rooms:   {len(rooms)}")
    print(f"arrows:  {len(arrows)}")
    print(f"upward:  {len(upward)}")
    print(f"circles: {len(circ)}")
    unlisted = [r for r in rooms if layer(r) == UNLISTED]
    if unlisted:
        print(f"rooms on no layer (treated as the top): {', '.join(unlisted)}")
    print()
    print("rooms by layer:")
    for i, (name, _) in enumerate(LAYERS + [("unlisted", [])]):
        here = [r for r in rooms if layer(r) == i]
        if here:
            print(f"  {i} {name:<10} {', '.join(here)}")
    if upward:
        print("\nupward arrows (source -> target: files):")
        for s, d in upward:
            print(f"  {s} -> {d}: {', '.join(sorted(arrows[(s, d)]))}")
    if circ:
        print("\ncircles:")
        for c in circ:
            print("  " + " <-> ".join(c))
    if args.arrows:
        print("\narrows:")
        for (s, d), fs in sorted(arrows.items()):
            print(f"  {s} -> {d} ({len(fs)} files)")


if __name__ == "__main__":
    main()
