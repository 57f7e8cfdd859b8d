"""The files the health corpus and its precursor set write: a run's result (``<out>/results/<id>.json``, replaced
atomically) and a table between two markers of a Markdown file (RULES.md)."""

import json
import os


def write_result(out, result):
    """Writes ``result`` (with its ``id``) to ``<out>/results/<id>.json`` through a temporary file; returns it."""
    os.makedirs(os.path.join(out, "results"), exist_ok=True)
    path = os.path.join(out, "results", result["id"] + ".json")
    with open(path + ".tmp", "w") as f:
        json.dump(result, f, indent=1, default=str)
    os.replace(path + ".tmp", path)
    return result


def write_between_markers(path, name, text):
    """Replaces what lies between ``<!-- NAME:begin -->`` and ``<!-- NAME:end -->`` in the file ``path`` with
    ``text``; a file without both markers is a one-line error (SystemExit)."""
    begin, end = "<!-- %s:begin -->" % name, "<!-- %s:end -->" % name
    with open(path) as f:
        doc = f.read()
    if begin not in doc or end not in doc:
        raise SystemExit("%s has no %s ... %s markers" % (path, begin, end))
    head, rest = doc.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(path, "w") as f:
        f.write(head + begin + "\n" + text + "\n" + end + tail)
