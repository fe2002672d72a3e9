#!/usr/bin/env python3
"""No import circle among a crate's modules: a module may use another only if that one, directly
or not, does not use it back.

Usage: check-module-cycles.py [--report-only] [--edges] CRATE_SRC_DIR...

For each directory it reads the crate roots there (lib.rs, main.rs), follows their `mod NAME;`
declarations to the module files, and builds the graph "file A names an item of file B" from
every path that names a module of the crate: `use` trees (braces expanded) and paths written in
code, starting with `crate::`, `$crate::`, `super::`, `self::` or the name of a module the file
declares. A path is resolved to the deepest module file it names; a name a module re-exports
(`pub use x::Name`, as lib.rs does) is followed to where it comes from, so reaching an item
through the crate root's facade is not a dependency on the root (any `use` binding is followed:
a child sees its parent's private imports too). Inline `mod NAME { ... }`
blocks (tests) belong to their file; declaring a module is not using it. Comments, strings and
char literals are blanked first, so a doc link is not an import.

Each strongly connected component of two or more files is an import circle: printed as one
shortest cycle through it, every edge with the file and line that makes it. The exit status is 1
if there is one, unless --report-only (which prints the same and exits 0). --edges also prints
every module with the modules it uses, in dependency order when there is no cycle.

Layers: a crate may also declare named layers ([`LAYERS`] below, per crate directory name),
lowest first, each a list of module names (a name covers that module and every module under it).
A module may use modules of its own layer and of the layers below it, never one above: each such
upward import is printed with the file and line that makes it, and fails the check like a
cycle. A module in no layer is not checked; a layer entry that names no module is an error (so
a rename cannot turn the rule off unseen).

Python 3 standard library only; it reads each file once (a whole crate in well under a second)."""

import os
import re
import sys
from collections import deque

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"

# Named layers per crate (the name of the directory that holds its src/), lowest first.
LAYERS = {
    "twoplane-server": [
        # What every route and the transport share: limits, refusals, origins, the store.
        ("base", ["conn_limits", "refusal", "cors", "loopback", "browser", "error_text", "store", "relay", "assets", "wakeup", "parking", "deadline"]),
        # A reader's response: admission, the SSE body, its hand-off, the reader paths.
        ("http", ["http"]),
        # The accept loop and the direct SSE path (its framing, sockets, sinks): bytes, not routes.
        ("transport", ["server", "sse_conn"]),
        # The routes: who may read and write, the producer, the AI SDK's resume route, the demo.
        ("routes", ["access", "metrics", "producer", "ui_stream", "demo"]),
        # The binary's assembly of all of them.
        ("app", ["serve"]),
    ],
    "twoplane-stream": [
        # The frames' SSE encoding and a join's replay: what the fan-out stores and writes.
        ("encoded", ["sse", "replay"]),
        # One shard's fan-out: a frame log and its subscribers' cursors.
        ("fanout", ["fanout"]),
        # The UI message stream, the other encoding a subscription may read.
        ("ui", ["ui_log"]),
        # A hosted stream, and a subscription over it or over a relay.
        ("hosted", ["hosted", "subscription"]),
        # The producer's handle and the plane.
        ("plane", ["handle", "plane"]),
    ],
}


def blank(src):
    """`src` with comments, string and char literals replaced by spaces (newlines kept, so
    offsets and line numbers are unchanged)."""
    out = list(src)
    i, n = 0, len(src)

    def wipe(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            wipe(i, j)
            i = j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            wipe(i, j)
            i = j
        elif (m := re.compile(r'b?r(#*)"').match(src, i)) and (i == 0 or not re.match(r"\w", src[i - 1])):
            close = '"' + m.group(1)
            j = src.find(close, m.end())
            j = n if j < 0 else j + len(close)
            wipe(i, j)
            i = j
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            wipe(i, j + 1)
            i = j + 1
        elif c == "'":
            # A char literal ('x', '\n', '\u{1F600}', '"'); otherwise a lifetime or label.
            m = re.compile(r"'(?:\\u\{[0-9A-Fa-f]+\}|\\.|[^\\'\n])'").match(src, i)
            if m:
                wipe(i, m.end())
                i = m.end()
            else:
                i += 1
        else:
            i += 1
    return "".join(out)


def split_top(s):
    """Split a use-tree list on the commas that are not inside braces."""
    parts, depth, cur = [], 0, []
    for ch in s:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def use_paths(tree):
    """The paths a use tree brings in, each as (segments, bound name or None for a glob);
    `x as y` is kept as `x@y` through the whitespace removal."""
    tree = re.sub(rf"({IDENT})\s+as\s+({IDENT})", r"\1@\2", tree)
    return expand_at(tree)


def expand_at(tree, prefix=()):
    """Expand one use tree (braces, `self`, globs) below `prefix`."""
    tree = re.sub(r"\s+", "", tree)
    if tree.startswith("::"):
        tree = tree[2:]
    if not tree:
        return []
    brace = tree.find("{")
    if brace >= 0 and tree.endswith("}"):
        head = [s for s in tree[:brace].split("::") if s]
        out = []
        for part in split_top(tree[brace + 1 : -1]):
            out.extend(expand_at(part, prefix + tuple(head)))
        return out
    segs = tree.split("::")
    alias = None
    if "@" in segs[-1]:
        segs[-1], alias = segs[-1].split("@", 1)
    segs = list(prefix) + segs
    if segs[-1] == "*":
        return [(tuple(segs[:-1]), None)]
    if segs[-1] == "self":
        segs = segs[:-1]
        if not segs:
            return []
    return [(tuple(segs), alias or segs[-1])]


class Module:
    def __init__(self, path, file, is_dir_owner):
        self.path = path  # tuple of segments; () is the crate root
        self.file = file
        self.dir_owner = is_dir_owner  # lib.rs, main.rs, mod.rs: children live beside it
        self.text = ""
        self.children = set()  # file modules it declares
        # name -> (absolute segments, line): what a `use` at file level binds. A path through
        # this module to one of these names reaches the item where it is defined (a child sees
        # its parent's private imports too, so every binding counts, not only `pub use`).
        self.imports = {}
        self.refs = []  # (absolute segments, line)


USE = re.compile(r"\buse\s+([^;]+);")
MOD_DECL = re.compile(rf"\bmod\s+({IDENT})\s*;")
MOD_INLINE = re.compile(rf"\bmod\s+({IDENT})\s*\{{")
PATH = re.compile(rf"(?<![\w:])(\$?crate|super|self|{IDENT})((?:\s*::\s*{IDENT})+)")


def name_of(path):
    return "::".join(path) if path else "crate"


def load_crate(src_dir, root_file):
    """Every file module reachable from `root_file` through `mod NAME;`, keyed by path."""
    modules = {}
    todo = [((), os.path.join(src_dir, root_file), True)]
    while todo:
        path, file, owner = todo.pop()
        if path in modules or not os.path.exists(file):
            continue
        mod = Module(path, file, owner)
        with open(file, encoding="utf-8") as f:
            mod.text = blank(f.read())
        modules[path] = mod
        base = os.path.dirname(file) if owner else os.path.splitext(file)[0]
        for m in MOD_DECL.finditer(mod.text):
            # A `mod x;` inside an inline module lives one folder deeper; none exist here, and
            # one that did would be reported missing below rather than silently mis-read.
            name = m.group(1)
            flat, nested = os.path.join(base, name + ".rs"), os.path.join(base, name, "mod.rs")
            child = path + (name,)
            mod.children.add(name)
            if os.path.exists(flat):
                todo.append((child, flat, False))
            elif os.path.exists(nested):
                todo.append((child, nested, True))
            else:
                sys.exit(f"{file}: `mod {name};` names no file ({flat} or {nested})")
    return modules


def inline_scopes(text):
    """[(offset, inline module names open there)], in offset order, one entry per change."""
    opens = {m.end() - 1 for m in MOD_INLINE.finditer(text)}
    names = {m.end() - 1: m.group(1) for m in MOD_INLINE.finditer(text)}
    stack, depth, scopes = [], 0, [(0, ())]
    for i, ch in enumerate(text):
        if ch == "{":
            depth += 1
            if i in opens:
                stack.append((names[i], depth))
                scopes.append((i, tuple(n for n, _ in stack)))
        elif ch == "}":
            if stack and stack[-1][1] == depth:
                stack.pop()
                scopes.append((i, tuple(n for n, _ in stack)))
            depth -= 1
    return scopes


def scope_at(scopes, offset):
    lo, hi = 0, len(scopes) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if scopes[mid][0] <= offset:
            lo = mid
        else:
            hi = mid - 1
    return scopes[lo][1]


def absolute(mod, inline, segs):
    """`segs` as written in `mod` (inside inline modules `inline`) to a path from the crate
    root, or None when it does not start inside this crate."""
    here = list(mod.path) + list(inline)
    head = segs[0]
    if head in ("crate", "$crate"):
        return tuple(segs[1:])
    if head in ("self", "super"):
        cur, i = here, 0
        while i < len(segs) and segs[i] in ("self", "super"):
            if segs[i] == "super":
                if not cur:
                    return None
                cur = cur[:-1]
            i += 1
        return tuple(cur) + tuple(segs[i:])
    if not inline and head in mod.children:
        return tuple(mod.path) + tuple(segs)
    return None


def scan(modules):
    for mod in modules.values():
        text = mod.text
        scopes = inline_scopes(text)
        line_at = lambda off: text.count("\n", 0, off) + 1  # noqa: E731
        used = []  # spans of use statements, so code paths inside them are not read twice
        for m in USE.finditer(text):
            used.append((m.start(), m.end()))
            inline = scope_at(scopes, m.start())
            for segs, bound in use_paths(m.group(1)):
                target = absolute(mod, inline, list(segs))
                if target is None:
                    continue
                line = line_at(m.start())
                mod.refs.append((target, line))
                if not inline and bound is not None:
                    mod.imports[bound] = (target, line)
        spans = iter(used)
        span = next(spans, None)
        for m in PATH.finditer(text):
            while span and span[1] <= m.start():
                span = next(spans, None)
            if span and span[0] <= m.start() < span[1]:
                continue
            segs = [m.group(1)] + [s.strip() for s in m.group(2).split("::") if s.strip()]
            target = absolute(mod, scope_at(scopes, m.start()), segs)
            if target is not None:
                mod.refs.append((target, line_at(m.start())))


def resolve(modules, target, seen=()):
    """The file module a path names: the deepest module on it, then through re-exports."""
    for k in range(len(target), -1, -1):
        if target[:k] in modules:
            owner = modules[target[:k]]
            rest = target[k:]
            if rest and rest[0] in owner.imports and (owner.path, rest[0]) not in seen:
                via, _ = owner.imports[rest[0]]
                return resolve(modules, via + rest[1:], seen + ((owner.path, rest[0]),))
            return owner.path
    return ()


def graph(modules):
    edges = {p: {} for p in modules}
    for mod in modules.values():
        for target, line in mod.refs:
            to = resolve(modules, target)
            if to != mod.path and to not in edges[mod.path]:
                edges[mod.path][to] = line
    return edges


def components(edges):
    """Tarjan's strongly connected components (iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(edges[nxt]))))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                out.append(sorted(comp))
    return out


def shortest_cycle(edges, comp):
    members = set(comp)
    start = comp[0]
    prev = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nxt in sorted(edges[node]):
            if nxt == start:
                path = [node]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [start]
            if nxt in members and nxt not in prev:
                prev[nxt] = node
                queue.append(nxt)
    return [start]


def layer_of(layers, path):
    """The index of the layer that holds module `path` (its own name or an ancestor's), or None."""
    for k in range(len(path), 0, -1):
        for i, (_, names) in enumerate(layers):
            if "::".join(path[:k]) in names:
                return i
    return None


def upward(layers, modules, edges):
    """Every import from a lower layer into a higher one, as (module, used module), and the
    layer entries that name no module."""
    known = {"::".join(p[:k]) for p in modules for k in range(1, len(p) + 1)}
    unknown = [(layer, name) for layer, names in layers for name in names if name not in known]
    out = []
    for a in sorted(edges):
        la = layer_of(layers, a)
        if la is None:
            continue
        for b in sorted(edges[a]):
            lb = layer_of(layers, b)
            if lb is not None and lb > la:
                out.append((a, b))
    return out, unknown


def main(argv):
    report_only = "--report-only" in argv
    show_edges = "--edges" in argv
    dirs = [a for a in argv if a not in ("--report-only", "--edges")]
    if not dirs:
        sys.exit(__doc__)
    found = 0
    for src in dirs:
        roots = [r for r in ("lib.rs", "main.rs") if os.path.exists(os.path.join(src, r))]
        if not roots:
            sys.exit(f"{src}: no lib.rs or main.rs")
        for root in roots:
            modules = load_crate(src, root)
            scan(modules)
            edges = graph(modules)
            cycles = [c for c in components(edges) if len(c) > 1]
            label = f"{src}/{root}"
            crate = os.path.basename(os.path.dirname(os.path.abspath(src)))
            layers = LAYERS.get(crate) if root == "lib.rs" else None
            if layers:
                ups, unknown = upward(layers, modules, edges)
                for layer, name in unknown:
                    print(f"{label}: layer {layer} names `{name}`, which is no module of the crate")
                if ups:
                    print(f"{label}: {len(ups)} upward import(s) among {len(layers)} layers ({' < '.join(n for n, _ in layers)})")
                for a, b in ups:
                    la, lb = layers[layer_of(layers, a)][0], layers[layer_of(layers, b)][0]
                    print(f"  upward import: {modules[a].file}:{edges[a][b]} {name_of(a)} ({la}) uses {name_of(b)} ({lb})")
                found += len(ups) + len(unknown)
                if not ups and not unknown:
                    print(f"{label}: {len(layers)} layers ({' < '.join(n for n, _ in layers)}), no upward import")
            if show_edges:
                # Tarjan emits components callees first: a module after everything it uses.
                for comp in components(edges):
                    for p in comp:
                        print(f"  {name_of(p)}: {', '.join(sorted(name_of(q) for q in edges[p])) or '-'}")
            if not cycles:
                print(f"{label}: {len(modules)} modules, no import cycle")
                continue
            found += len(cycles)
            print(f"{label}: {len(cycles)} import cycle(s) among {len(modules)} modules")
            for comp in cycles:
                cycle = shortest_cycle(edges, comp)
                print(f"  cycle: {' -> '.join(name_of(p) for p in cycle)}")
                for a, b in zip(cycle, cycle[1:]):
                    print(f"    {modules[a].file}:{edges[a][b]} uses {name_of(b)}")
                if len(comp) > len(cycle) - 1:
                    print(f"    (the same knot also holds: {', '.join(name_of(p) for p in comp if p not in cycle)})")
    if found and not report_only:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
