#!/usr/bin/env python3
"""Each layer of libranks reaches only the headers it may (runtime/CMakeLists.txt):

  public  include/ranks/            may reach: public
  core    runtime/ranks/*, detail/,  may reach: public, core
          object/
  real    runtime/ranks/store/,     may reach: public, core, real
          launch/, backends/, real/
  sim     sim/ranks/sim/            may reach: public, core, sim (not real: the simulator plugs
                                    in through the Backend interface, not the real run's pieces)

Follows every `#include "ranks/..."` from each file of a layer, transitively, resolving it as the
build does (include/, runtime/, sim/; the generated config.hpp is public), and names each file
that reaches a header of a layer it may not, with the chain of includes that got there.

  check_layers.py SOURCE_DIR
"""
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*"(ranks/[^"]+)"', re.M)
MAY_REACH = {
    "public": {"public"},
    "core": {"public", "core"},
    "real": {"public", "core", "real"},
    "sim": {"public", "core", "sim"},
}


def layer_of(path, root):
    rel = path.relative_to(root).as_posix()
    if rel.startswith("include/"):
        return "public"
    if rel.startswith("sim/ranks/sim/"):
        return "sim"
    if rel.startswith("runtime/ranks/backends/") and rel.count("/") > 3:
        return None  # a backend's own folder: a library of its own, outside these layers
    for real in ("store/", "launch/", "backends/", "real/"):
        if rel.startswith("runtime/ranks/" + real):
            return "real"
    if rel.startswith("runtime/ranks/"):
        return "core"
    return None


def resolve(name, root):
    for base in ("include", "runtime", "sim"):
        candidate = root / base / name
        if candidate.is_file():
            return candidate
    return None  # generated (config.hpp) or not ours


def main(root):
    root = pathlib.Path(root).resolve()
    files = [p for base in ("include", "runtime", "sim") for p in (root / base).rglob("*")
             if p.suffix in (".hpp", ".cpp") and layer_of(p, root) is not None]
    if not files:
        sys.exit(f"check_layers: no sources under {root}")
    failures = []
    for start in files:
        layer = layer_of(start, root)
        seen = {start}
        stack = [(start, [start])]
        while stack:
            path, chain = stack.pop()
            for name in INCLUDE.findall(path.read_text(errors="replace")):
                header = resolve(name, root)
                if header is None or header in seen:
                    continue
                seen.add(header)
                reached = layer_of(header, root)
                if reached is not None and reached not in MAY_REACH[layer]:
                    via = " -> ".join(p.relative_to(root).as_posix() for p in chain + [header])
                    failures.append(f"{layer} file reaches a {reached} header: {via}")
                    continue
                stack.append((header, chain + [header]))
    if failures:
        print("\n".join(failures))
        sys.exit(f"check_layers: {len(failures)} include(s) cross a layer boundary")
    print(f"check_layers: {len(files)} files, every include within its layer's reach")


if __name__ == "__main__":
    main(*sys.argv[1:])
