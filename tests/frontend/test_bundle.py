"""The built bundles hold one copy of each library (npm's ``dependencies``), and the page's warnings are none of ours.

Each library is recognised in a bundle by string literals whose text occurs exactly once in its own module file and
nowhere in our sources (minifiers rename identifiers, never strings): one copy of the library means each of them occurs at
most once, and its code is there at all when most of them do. TensorBoard's own page logs "Multiple instances of
Three.js being imported." (its main bundle and the projector plugin each carry Three.js): the browser test checks
that this comes from TensorBoard's page, on any tab, and that nothing the MindSpore tab loads logs a warning.
"""

import collections
import glob
import json
import os
import re

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FRONTEND = os.path.join(ROOT, "frontend")
STATIC = os.path.join(ROOT, "tb_plugin_mindspore", "static")
BUNDLES = ("index.js", "report.js")
_LITERAL = re.compile(r'"([^"\\\n]{10,})"|\'([^\'\\\n]{10,})\'')


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def _module_file(package):
    """The ES module file of an installed package (what Vite bundles)."""
    base = os.path.join(FRONTEND, "node_modules", package)
    meta = json.loads(_read(os.path.join(base, "package.json")))
    return os.path.join(base, meta.get("module") or meta.get("main") or "index.js")


def signatures(package, ours):
    """String literals whose text occurs exactly once in the package's module file and never in our own sources."""
    source = _read(_module_file(package))
    literals = {a or b for a, b in _LITERAL.findall(source)}
    return sorted(s for s in literals if source.count(s) == 1 and s not in ours)


@pytest.fixture(scope="module")
def built():
    missing = [b for b in BUNDLES if not os.path.exists(os.path.join(STATIC, b))]
    if missing:
        pytest.skip("the frontend is not built (npm run build in frontend/)")
    if not os.path.isdir(os.path.join(FRONTEND, "node_modules")):
        pytest.skip("frontend/node_modules is not installed (npm ci in frontend/)")
    return {b: _read(os.path.join(STATIC, b)) for b in BUNDLES}


def test_each_library_is_in_each_bundle_once(built):
    deps = json.loads(_read(os.path.join(FRONTEND, "package.json")))["dependencies"]
    ours = "\n".join(_read(p) for p in glob.glob(os.path.join(FRONTEND, "src", "**", "*.*"), recursive=True))
    assert deps, "no dependencies to check"
    for package in deps:
        marks = signatures(package, ours)
        assert len(marks) >= 5, (package, marks)
        for name, text in built.items():
            counts = {m: text.count(m) for m in marks}
            twice = {m: n for m, n in counts.items() if n > 1}
            assert not twice, "%s holds %s more than once: %r" % (name, package, twice)
            # Some marks are code between two literals or debug text the minifier drops; a few must be there.
            present = sum(1 for n in counts.values() if n == 1)
            assert present >= 3, "%s does not hold %s (%d of %d marks)" % (name, package, present, len(marks))


def test_one_version_of_each_package_and_no_three_js(built):
    lock = json.loads(_read(os.path.join(FRONTEND, "package-lock.json")))
    names = collections.Counter(path.rsplit("node_modules/", 1)[-1] for path in lock["packages"] if path)
    assert [n for n, c in names.items() if c > 1] == [], "a package installed twice: " + repr(names.most_common(3))
    for name, text in built.items():
        assert "Multiple instances of Three.js" not in text and "THREE" not in text, name


@pytest.mark.slow
def test_the_three_js_warning_is_tensorboard_s_own_and_the_tab_logs_none(dashboard_server, browser):
    base, _ = dashboard_server

    def messages(tab):
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        seen = []
        page.on("console", lambda m: seen.append((m.type, m.text, m.location.get("url", ""))))
        try:
            page.goto(base + "/#" + tab)
            if tab == "mindspore":
                frame = page.wait_for_selector("iframe", timeout=60000).content_frame()
                frame.wait_for_selector("[data-testid=mindspore-dashboard][data-state=ready]", timeout=60000)
                frame.wait_for_selector("[data-testid=health-panel][data-state=ready]", timeout=60000)
            else:
                page.wait_for_load_state("networkidle", timeout=60000)
            page.wait_for_timeout(1000)
        finally:
            context.close()
        return seen

    ours = messages("mindspore")
    from_tab = [m for m in ours if "/data/plugin/mindspore" in m[2] or "plugin_entry.html" in m[2]]
    assert [m for m in from_tab if m[0] in ("warning", "error") and "GL Driver Message" not in m[1]] == [], from_tab
    three = [m for m in ours if "Multiple instances of Three.js" in m[1]]
    if three:   # TensorBoard's: its own page logs it, on a tab that never loads ours, from its own script
        assert all("/data/plugin/mindspore" not in m[2] for m in three), three
        assert any("Multiple instances of Three.js" in m[1] for m in messages("scalars")), three
