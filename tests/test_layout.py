"""The layout is a ladder: every import goes to a layer below (or within its own folder), no cycles, and no import
inside a function unless it says why (start-up cost). Walks the source with ``ast`` (and the frontend's import
lines), so it runs without MindSpore or a browser.

The ladder, bottom to top (README "Architecture"):

* server side ``tb_plugin_mindspore``: ``io`` < ``contract`` (with ``metadata.py``) < ``landscape`` < ``writing`` <
  ``sources`` < ``health`` | ``compare`` (side by side) < ``answers`` < ``server`` (with ``loader.py``) <
  ``commands`` (with ``cli.py``);
* training side ``tb_mindspore_callbacks``: ``common`` < ``cells`` < ``recorders`` | ``landscape`` (side by side)
  < the adapters at its top; it may use the server side up to ``health``;
* frontend ``frontend/src``: ``base`` < ``api`` | ``chart`` < ``views`` (shared widgets) <
  ``views/sections/<name>`` (side by side) < ``page`` < the entries (``index.js``, ``report.js``).
"""

import ast
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = {"tb_plugin_mindspore": "tb_plugin_mindspore", "tb_mindspore_callbacks": "callbacks"}

# (rank, folder) per module prefix; a module's layer is that of its longest matching prefix. Layers of equal rank
# in different folders are side by side: neither may import the other.
SERVER = ["io", "contract", "landscape", "writing", "sources", "health", "answers", "server", "commands"]
LAYERS = {"tb_plugin_mindspore." + name: (rank, name) for rank, name in enumerate(SERVER)}
LAYERS.update({
    "tb_plugin_mindspore.compare": (SERVER.index("health"), "compare"),   # beside health: two runs' series compared
    "tb_plugin_mindspore": (-1, "root"),                    # __init__: the version, imports nothing
    "tb_plugin_mindspore.metadata": (SERVER.index("contract"), "contract"),
    "tb_plugin_mindspore.loader": (SERVER.index("server"), "server"),
    "tb_plugin_mindspore.cli": (SERVER.index("commands"), "commands"),
})
TRAINING_BASE = SERVER.index("health") + 1    # the training side may use the server side up to health
LAYERS.update({
    "tb_mindspore_callbacks.common": (TRAINING_BASE, "callbacks.common"),
    "tb_mindspore_callbacks.cells": (TRAINING_BASE + 1, "callbacks.cells"),
    "tb_mindspore_callbacks.recorders": (TRAINING_BASE + 2, "callbacks.recorders"),
    "tb_mindspore_callbacks.landscape": (TRAINING_BASE + 2, "callbacks.landscape"),
    "tb_mindspore_callbacks": (TRAINING_BASE + 3, "callbacks"),    # the adapters
})
# Rungs of the server side the training side must never use (it runs inside training, not in TensorBoard).
NOT_FOR_TRAINING = ("answers", "server", "commands")
LAZY = re.compile(r"#\s*lazy:\s*\S")


def modules():
    """``{module name: (path, is package)}`` of both packages."""
    out = {}
    for name, folder in PACKAGES.items():
        base = os.path.join(ROOT, folder)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if d not in ("__pycache__", "static")]
            for f in filenames:
                if f.endswith(".py"):
                    rel = os.path.relpath(os.path.join(dirpath, f), base)[:-3].replace(os.sep, ".")
                    mod = name if rel == "__init__" else name + "." + (rel[:-9] if rel.endswith(".__init__") else rel)
                    out[mod] = (os.path.join(dirpath, f), f == "__init__.py")
    return out


MODULES = modules()


def layer_of(mod):
    best = None
    for prefix in LAYERS:
        if (mod == prefix or mod.startswith(prefix + ".")) and (best is None or len(prefix) > len(best)):
            best = prefix
    return LAYERS[best]


def _target(mod, is_pkg, node, alias):
    """The project module an import names (``None`` for a third-party one)."""
    if isinstance(node, ast.Import):
        name = alias.name
    else:
        if node.level:
            parts = mod.split(".") if is_pkg else mod.split(".")[:-1]
            parts = parts[:len(parts) - node.level + 1]
            base = ".".join(parts + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        name = base + "." + alias.name if base + "." + alias.name in MODULES else base
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _marked(lines, node):
    """Whether ``# lazy: <why>`` stands on the import's lines or on a comment above the block of imports (and
    blank lines) it belongs to."""
    if LAZY.search(" ".join(lines[node.lineno - 1:node.end_lineno])):
        return True
    i = node.lineno - 2
    while i >= 0:
        text = lines[i].strip()
        if LAZY.search(text):
            return True
        if text and not text.startswith(("#", "from ", "import ", ")")) and not text.endswith(("(", ",")):
            return False
        i -= 1
    return False


def imports():
    """``[(importer, imported, line, lazy, marked)]``: every import of one project module by another; ``lazy`` when it
    sits inside a function, ``marked`` when its line (or the one above) says ``# lazy: <why>``."""
    out = []
    for mod, (path, is_pkg) in MODULES.items():
        with open(path, encoding="utf-8") as f:
            text = f.read()
        lines = text.splitlines()

        def walk(node, in_function):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    for alias in child.names:
                        target = _target(mod, is_pkg, child, alias)
                        if target and target != mod:
                            out.append((mod, target, child.lineno, in_function, _marked(lines, child)))
                walk(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

        walk(ast.parse(text), False)
    return out


IMPORTS = imports()


def _where(mod, line):
    return "%s:%d" % (os.path.relpath(MODULES[mod][0], ROOT), line)


def test_every_import_goes_down_the_ladder():
    wrong = []
    for importer, imported, line, _, marked in IMPORTS:
        (rank_a, folder_a), (rank_b, folder_b) = layer_of(importer), layer_of(imported)
        if folder_a == folder_b:
            continue
        training = importer.startswith("tb_mindspore_callbacks")
        if imported.startswith("tb_mindspore_callbacks") and not training:
            # only a command may start training code (the demo), and only when it runs
            if folder_a == "commands" and marked:
                continue
            wrong.append("%s imports %s (the server side never imports the callbacks)" % (_where(importer, line),
                                                                                          imported))
        elif training and folder_b in NOT_FOR_TRAINING:
            wrong.append("%s imports %s (%s is not for training code)" % (_where(importer, line), imported, folder_b))
        elif rank_b > rank_a:
            wrong.append("%s imports %s: upward (%s above %s)" % (_where(importer, line), imported, folder_b, folder_a))
        elif rank_b == rank_a:
            wrong.append("%s imports %s: sideways (%s beside %s)" % (_where(importer, line), imported, folder_b,
                                                                    folder_a))
    assert not wrong, "imports against the ladder:\n" + "\n".join(wrong)


def test_no_import_inside_a_function_without_its_reason():
    """An import inside a function hides a dependency (and often a cycle); one is kept only for start-up cost and
    says so: ``# lazy: <why>`` on its line or the line above."""
    hidden = ["%s imports %s inside a function" % (_where(a, line), b) for a, b, line, lazy, marked in IMPORTS
              if lazy and not marked]
    assert not hidden, "imports inside functions without '# lazy: <why>':\n" + "\n".join(hidden)


def _cycle(edges):
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
    state, stack = {}, []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def _package_of(mod):
    """The package a module is in; the server side's root modules (``metadata``, ``loader``, ``cli``) count as part
    of their layer."""
    path, is_pkg = MODULES[mod]
    package = mod if is_pkg else mod.rpartition(".")[0]
    if package == "tb_plugin_mindspore" and mod != package:
        return "tb_plugin_mindspore." + layer_of(mod)[1]
    return package


def test_no_cycles_between_modules():
    """Every import counts here, the lazy ones too: a cycle held open by a function-level import is still one.
    A package's ``__init__`` importing its own submodules is the package, not a cycle."""
    edges = [(a, b) for a, b, *_ in IMPORTS
             if not (MODULES[b][1] and a.startswith(b + "."))]   # a submodule importing its own package's names
    cycle = _cycle(edges)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_no_cycles_between_packages():
    edges = {(_package_of(a), _package_of(b)) for a, b, *_ in IMPORTS}
    edges = {(a, b) for a, b in edges if a != b and not a.startswith(b + ".") and not b.startswith(a + ".")}
    cycle = _cycle(edges)
    assert cycle is None, "package cycle: " + " -> ".join(cycle)


def test_every_package_says_what_it_holds_and_may_import():
    missing = [mod for mod, (path, is_pkg) in MODULES.items() if is_pkg and mod.count(".") == 1
               and "May import" not in (ast.get_docstring(ast.parse(open(path, encoding="utf-8").read())) or "")]
    assert not missing, "package docstrings without 'May import': %s" % missing


def test_the_checker_sees_wrong_imports():
    """The ladder test itself: an upward, a sideways and a cyclic import are caught."""
    assert layer_of("tb_plugin_mindspore.io.fs")[0] < layer_of("tb_plugin_mindspore.answers.scalars")[0]
    assert layer_of("tb_mindspore_callbacks.recorders.core")[0] == layer_of("tb_mindspore_callbacks.landscape.run")[0]
    assert layer_of("tb_plugin_mindspore.metadata")[1] == "contract"
    assert _cycle([("a", "b"), ("b", "c"), ("c", "a")]) == ["a", "b", "c", "a"]
    assert _cycle([("a", "b"), ("b", "c")]) is None


# -- frontend ---------------------------------------------------------------------------------------------------
SRC = os.path.join(ROOT, "frontend", "src")
FRONT = [("base", 0), ("api", 1), ("chart", 1), ("views", 2), ("page", 4), ("", 5)]
_JS_IMPORT = re.compile(r"""^\s*(?:import|export)\b[^;]*?\bfrom\s*["'](\.[^"'?]+)|^\s*import\s*["'](\.[^"'?]+)""",
                        re.M)


def front_layer(rel):
    """``(rank, folder)`` of a file under frontend/src (``rel`` with forward slashes)."""
    parts = rel.split("/")
    if parts[:2] == ["views", "sections"] and len(parts) > 3:
        return 3, "views/sections/" + parts[2]
    for folder, rank in FRONT:
        if folder and parts[0] == folder:
            return rank, folder
    return 5, ""


def js_imports():
    out = []
    for dirpath, _, filenames in os.walk(SRC):
        for f in filenames:
            if not f.endswith(".js"):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, SRC).replace(os.sep, "/")
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
            for m in _JS_IMPORT.finditer(text):
                spec = m.group(1) or m.group(2)
                target = os.path.relpath(os.path.normpath(os.path.join(dirpath, spec)), SRC).replace(os.sep, "/")
                out.append((rel, target, text[:m.start()].count("\n") + 1))
    return out


@pytest.mark.skipif(not os.path.isdir(SRC), reason="no frontend sources")
def test_frontend_imports_go_down_the_ladder():
    wrong = []
    for rel, target, line in js_imports():
        (ra, fa), (rb, fb) = front_layer(rel), front_layer(target)
        if fa == fb:
            continue
        if rb >= ra:
            wrong.append("frontend/src/%s:%d imports %s (%s)" % (rel, line, target,
                                                                 "sideways" if rb == ra else "upward"))
    assert not wrong, "frontend imports against the ladder:\n" + "\n".join(wrong)
    edges = [(a, b) for a, b, _ in js_imports()]
    cycle = _cycle(edges)
    assert cycle is None, "frontend import cycle: " + " -> ".join(cycle)


@pytest.mark.skipif(not os.path.isdir(SRC), reason="no frontend sources")
def test_every_client_of_the_routes_is_in_api():
    """A section's requests go through its client in ``frontend/src/api/`` (README: where a new section goes)."""
    outside = []
    for dirpath, _, filenames in os.walk(SRC):
        rel_dir = os.path.relpath(dirpath, SRC).replace(os.sep, "/")
        if rel_dir == "api" or rel_dir.startswith("api/"):
            continue
        for f in filenames:
            if f.endswith(".js"):
                with open(os.path.join(dirpath, f), encoding="utf-8") as fh:
                    for n, line in enumerate(fh, 1):
                        if re.search(r"\b(fetch|getJson|XMLHttpRequest)\s*\(", line):
                            outside.append("frontend/src/%s/%s:%d" % (rel_dir, f, n))
    assert not outside, "requests outside frontend/src/api/: %s" % outside
