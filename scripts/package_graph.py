#!/usr/bin/env python3
"""Print the module's package graph as a Mermaid flowchart.

docs/architecture.md shows its output. It reads `go list` from the
current directory, folds the test plugins and the plugins into one node
each, and drops every edge that a longer path already implies (the
transitive reduction), so the picture shows layers, not every import.

    python3 scripts/package_graph.py > graph.mmd
"""

import json
import subprocess
import sys


def short(path, module):
    p = path[len(module) + 1:] if path.startswith(module + "/") else path
    if p.startswith("internal/testplugins/"):
        return "internal/testplugins/*"
    if p.startswith("plugins/"):
        return "plugins/*"
    if p in ("cli/slurmtest",) or p.endswith("test"):
        return None
    return p


def graph(module):
    out = subprocess.run(["go", "list", "-json", "./..."], check=True, capture_output=True, text=True).stdout
    decoder, edges, i = json.JSONDecoder(), {}, 0
    while i < len(out):
        pkg, i = decoder.raw_decode(out, i)
        while i < len(out) and out[i].isspace():
            i += 1
        src = short(pkg["ImportPath"], module)
        if src is None:
            continue
        edges.setdefault(src, set())
        for imp in pkg.get("Imports", []):
            dst = short(imp, module) if imp.startswith(module) else None
            if dst and dst != src:
                edges[src].add(dst)
    return edges


def reachable(edges, start, skip):
    seen, stack = set(), [n for n in edges.get(start, ()) if n != skip]
    while stack:
        n = stack.pop()
        if n not in seen:
            seen.add(n)
            stack.extend(edges.get(n, ()))
    return seen


def reduce(edges):
    return {src: {d for d in dsts if d not in reachable(edges, src, d)} for src, dsts in edges.items()}


def node(p):
    return p.replace("/", "_").replace("*", "all").replace("-", "_")


def main():
    module = subprocess.run(["go", "list", "-m"], check=True, capture_output=True, text=True).stdout.strip()
    edges = reduce(graph(module))
    print("flowchart LR")
    for src in sorted(edges):
        for dst in sorted(edges[src]):
            print(f'  {node(src)}["{src}"] --> {node(dst)}["{dst}"]')
    return 0


if __name__ == "__main__":
    sys.exit(main())
