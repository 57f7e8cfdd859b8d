"""Where TensorBoard was told to read: ``--logdir DIR`` or ``--logdir_spec name1:DIR1,name2:DIR2``, as roots.

TensorBoard names the runs under a ``--logdir_spec`` entry ``<name>/<folder relative to DIR>`` (the entry's
folder itself is ``<name>/.``), and the runs under an entry without a name by the relative folder alone. Every
reader of the plugin that walks folders (``*_MS`` files, the plugin's own event-file reader, rank files, the
health rules' file statistics, the status route) names its runs the same way through :class:`Roots`, so a folder
holding event files and ``*_MS`` files is still one run, and the tab lists the names TensorBoard's own tabs list.

The entries are parsed by the flag's documented format (comma-separated; ``name:path``; a path starting with
``/``, a drive letter or a URL scheme has no name; the first colon splits name and path).

Usage::

    roots = Roots.from_flags(flags)          # or Roots.single(logdir)
    roots.entries                            # (Root(name, path), ...)
    roots.run_name(root, "sub")              # "exp1/sub" (TensorBoard's naming)
    roots.folder("exp1/sub")                 # "/abs/exp1/sub", or None for a name outside every root
    roots.started_with()                     # "--logdir_spec exp1:/abs/exp1,exp2:/abs/exp2"
    label("exp1/.")                          # "exp1": the name without TensorBoard's "/." (what the tab shows)
"""

import collections
import os
import re

from ..io import fs

Root = collections.namedtuple("Root", "name path")
Root.__doc__ = """One entry: ``name`` (None for an entry without one) and ``path`` (absolute, or a URL)."""

_URI = re.compile(r"^[a-zA-Z][0-9a-zA-Z.]*://")


def parse_spec(spec):
    """``[Root]`` of a ``--logdir_spec`` value, in the order given; empty entries are skipped."""
    out = []
    for entry in (spec or "").split(","):
        entry = entry.strip()
        if not entry:
            continue
        name, path = None, entry
        if (_URI.match(entry) is None and ":" in entry and not entry.startswith("/")
                and not os.path.splitdrive(entry)[0]):
            name, _, path = entry.partition(":")
        if _URI.match(path) is None:
            path = os.path.realpath(os.path.expanduser(path))
        out.append(Root(name or None, path))
    return out


def label(run):
    """What the tab shows for a run name: TensorBoard's ``<name>/.`` for an entry's own folder is ``<name>``."""
    if run.endswith("/.") and len(run) > 2:
        return run[:-2]
    return run


def _split(run):
    parts = run.replace("\\", "/").split("/")
    if run.startswith("/") or any(p in ("", "..") for p in parts) or ":" in parts[0]:
        return None
    return [p for p in parts if p != "."]


class Roots:
    """The folders TensorBoard reads, each with the name its runs get (see the module doc)."""

    def __init__(self, entries, spec=None):
        self.entries = tuple(entries)
        self.spec = spec      # the --logdir_spec value as given, or None for --logdir

    @classmethod
    def single(cls, logdir):
        """The roots of ``--logdir`` (one root without a name; none for an empty logdir)."""
        return cls([Root(None, str(logdir))] if logdir else [])

    @classmethod
    def from_flags(cls, flags, logdir=""):
        """The roots TensorBoard was started with. ``logdir``: the plugin context's ``logdir``, used when the flags
        have none (TensorBoard puts the ``--logdir_spec`` value there when it was started with that)."""
        flag_logdir = getattr(flags, "logdir", "") or ""
        spec = getattr(flags, "logdir_spec", "") or ""
        if spec and not flag_logdir:
            return cls(parse_spec(spec), spec=spec)
        return cls.single(flag_logdir or logdir or "")

    @property
    def is_spec(self):
        return self.spec is not None

    def __bool__(self):
        return bool(self.entries)

    def __iter__(self):
        return iter(self.entries)

    def __len__(self):
        return len(self.entries)

    @property
    def logdir(self):
        """The one ``--logdir`` (None under ``--logdir_spec`` or with no logdir)."""
        if self.is_spec or not self.entries:
            return None
        return self.entries[0].path

    @staticmethod
    def run_name(root, rel):
        """TensorBoard's name of the folder ``rel`` (relative, ``"."`` for the root itself) under ``root``."""
        rel = rel.replace("\\", "/") or "."
        if root.name:
            return root.name + "/" + rel
        return rel

    def locate(self, run):
        """``(root, relative folder)`` of a run name, or None. An entry's name is matched before unnamed entries,
        longest name first; a name that leaves the root (``..``) matches nothing."""
        if not self.is_spec:
            if not self.entries:
                return None
            parts = _split(run) if run not in (".", "") else []
            return None if parts is None else (self.entries[0], "/".join(parts) or ".")
        for root in sorted((r for r in self.entries if r.name), key=lambda r: -len(r.name)):
            if run == root.name or run.startswith(root.name + "/"):
                parts = _split(run[len(root.name) + 1:] or ".")
                if parts is not None:
                    return root, "/".join(parts) or "."
        for root in self.entries:
            if root.name is None:
                parts = _split(run) if run not in (".", "") else []
                if parts is not None:
                    return root, "/".join(parts) or "."
        return None

    def folder(self, run):
        """The folder of a run name (absolute local path or URL), or None for a name outside every root."""
        found = self.locate(run)
        if found is None:
            return None
        root, rel = found
        base = root.path if fs.is_remote(root.path) else os.path.expanduser(root.path)
        return base if rel == "." else fs.join(base, *rel.split("/"))

    def started_with(self):
        """The flag TensorBoard was started with, as the status route says it."""
        if self.is_spec:
            return "--logdir_spec " + ",".join(("%s:%s" % (r.name, r.path)) if r.name else r.path
                                               for r in self.entries)
        if self.entries:
            return "--logdir " + self.entries[0].path
        return ""
