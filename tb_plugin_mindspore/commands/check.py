"""``tb-mindspore check LOGDIR``: the health rules over every run under a logdir, for many runs at once.

Exit status: 0 when the check ran (and no run reached ``--fail-on``), 1 when a run reached the ``--fail-on`` level,
2 with a one-line reason on bad input (missing logdir, no runs, bad ``--set``).
"""

import argparse
import json
import os
import sys

from ..io import fs

PROG = "tb-mindspore"
EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
_MARK = {"error": "ERROR", "warn": "WARN ", "info": "info "}


def add_check_parser(subparsers):
    """Registers ``check`` on an ``argparse`` subparsers object; the handler is ``args.func(args) -> exit code``."""
    p = subparsers.add_parser(
        "check",
        help="diagnose the health of every training run under a logdir (NaN, exploding gradients, LR schedule "
             "not applied, overfitting, stalled runs, ...)",
        description="Runs the health rules over every run under LOGDIR (TensorBoard event files and MindSpore "
                    "*_MS summary files) and prints each run's status (ok/warn/error) with its findings: the "
                    "rule, what to do, the tag and the step range that shows it.",
        epilog="Exit status: 0 when the check ran, 1 when a run reached --fail-on, 2 on bad input. "
               "JSON: {\"runs\": [{\"run\", \"status\", \"findings\": [{\"rule\", \"level\", \"message\", "
               "\"tag\", \"steps\": [first, last]}]}]}.",
    )
    p.add_argument("logdir", nargs="?", metavar="LOGDIR", help="folder holding the run folders")
    p.add_argument("--format", choices=("text", "json", "md"), default="text",
                   help="output format (default: %(default)s)")
    p.add_argument("--fail-on", choices=("warn", "error"), default=None,
                   help="exit with status 1 when a run reaches this level (default: never)")
    p.add_argument("--set", action="append", default=[], metavar="RULE.THRESHOLD=VALUE",
                   help="override a rule's threshold, e.g. --set log_size.max_bytes=1e9 (repeatable); "
                        "RULE.level=info|warn|error changes what the rule reports")
    p.add_argument("--disable", action="append", default=[], metavar="RULE",
                   help="skip a rule (repeatable)")
    p.add_argument("--list-rules", action="store_true", help="list the rules with their sources and thresholds")
    p.set_defaults(func=run_check)
    return p


def _error(message):
    print("%s check: error: %s" % (PROG, message), file=sys.stderr)
    return EXIT_BAD_INPUT


def run_check(args):
    # lazy: start-up cost (the rules and the readers load only when `check` runs, not for `tb-mindspore --help`)
    from ..health import engine, settings
    from . import logdir_check

    if args.list_rules:
        print(format_rules(engine.describe_rules()))
        return EXIT_OK
    if not args.logdir:
        return _error("missing LOGDIR (the folder holding the run folders)")
    try:
        config = settings.config_from_settings(args.set, args.disable)
    except ValueError as e:
        return _error(str(e))
    logdir = args.logdir
    path = fs.normalize(logdir)     # a local folder or a URL (s3://bucket/prefix; see reading/fs.py)
    try:
        found = fs.exists(path)
    except OSError as e:            # no library for the URL's protocol
        return _error(str(e))
    if not found:
        hint = ""
        if fs.is_remote(path):
            hint = " (nothing under that prefix, or the store cannot be reached)"
        elif not os.path.isabs(os.path.expanduser(logdir)):
            hint = " (relative to the current folder %s)" % os.getcwd()
        return _error("no such logdir: %s%s" % (path, hint))
    if not fs.isdir(path):
        return _error("not a folder: %s" % path)
    result = logdir_check.report(path, config)   # runs as the tab names them, on every core
    for w in result.get("warnings", ()):   # records and files left out: on stderr too (the JSON keeps them)
        where = " at byte %d" % w["offset"] if w.get("offset") else ""
        print("%s check: warning: %s%s: %s" % (PROG, w["file"], where, w["reason"]), file=sys.stderr)
    if not result.get("warnings"):
        result.pop("warnings", None)
    if not result["runs"]:
        return _error("no training runs under %s (no TensorBoard event files or MindSpore summary files with "
                      "data)" % path)
    out = {"json": format_json, "md": format_markdown}.get(args.format, format_text)(result)
    sys.stdout.write(out if out.endswith("\n") else out + "\n")
    sys.stdout.flush()
    if args.fail_on and any(engine.reaches(r["status"], args.fail_on) for r in result["runs"]):
        return EXIT_FAILED
    return EXIT_OK


# -- output formats -----------------------------------------------------------------------------------------------
def _counts(result):
    counts = {"ok": 0, "warn": 0, "error": 0}
    for r in result["runs"]:
        counts[r["status"]] += 1
    return counts


def _summary(result):
    c = _counts(result)
    return "%d run(s): %d error, %d warn, %d ok" % (len(result["runs"]), c["error"], c["warn"], c["ok"])


def _steps_text(steps):
    return "step %d" % steps[0] if steps[0] == steps[1] else "steps %d-%d" % (steps[0], steps[1])


def format_json(result):
    return json.dumps(result, indent=2, sort_keys=False)


def format_text(result):
    lines = []
    for r in result["runs"]:
        lines.append("%s  [%s]" % (r["run"], r["status"]))
        if not r["findings"]:
            lines.append("  no findings")
        for f in r["findings"]:
            where = _steps_text(f["steps"]) + ((" of %s" % f["tag"]) if f["tag"] else "")
            lines.append("  %s %s (%s): %s" % (_MARK[f["level"]], f["rule"], where, f["message"]))
        lines.append("")
    left_out = result.get("warnings") or ()
    if left_out:
        lines.append("left out (not read):")
        lines += ["  %s%s: %s" % (w["file"], " at byte %d" % w["offset"] if w.get("offset") else "", w["reason"])
                  for w in left_out]
        lines.append("")
    lines.append(_summary(result))
    return "\n".join(lines)


def _md_cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def format_markdown(result):
    lines = ["# Training health", "", _summary(result), "", "| run | status | errors | warnings |",
             "| --- | --- | --- | --- |"]
    for r in result["runs"]:
        levels = [f["level"] for f in r["findings"]]
        lines.append("| %s | %s | %d | %d |" % (_md_cell(r["run"]), r["status"], levels.count("error"),
                                               levels.count("warn")))
    for r in result["runs"]:
        if not r["findings"]:
            continue
        lines += ["", "## %s (%s)" % (_md_cell(r["run"]), r["status"]), "",
                  "| level | rule | tag | steps | what to do |", "| --- | --- | --- | --- | --- |"]
        for f in r["findings"]:
            lines.append("| %s | %s | %s | %d-%d | %s |" % (
                f["level"], f["rule"], _md_cell(f["tag"] or "-"), f["steps"][0], f["steps"][1],
                _md_cell(f["message"])))
    left_out = result.get("warnings") or ()
    if left_out:
        lines += ["", "## Left out (not read)", "", "| file | byte | reason |", "| --- | --- | --- |"]
        lines += ["| %s | %s | %s |" % (_md_cell(w["file"]), "-" if w.get("offset") is None else w["offset"],
                                        _md_cell(w["reason"])) for w in left_out]
    return "\n".join(lines)


def format_rules(rules):
    lines = []
    for r in rules:
        lines.append("%s (%s): %s" % (r["id"], r["level"], r["summary"]))
        lines.append("  source: %s" % r["source"])
        if r["defaults"]:
            lines.append("  thresholds: %s" % ", ".join("%s=%r" % kv for kv in sorted(r["defaults"].items())))
    return "\n".join(lines)


def main(argv=None):
    """Standalone entry (``python -m tb_plugin_mindspore.commands.check check ...``)."""
    parser = argparse.ArgumentParser(prog=PROG)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    add_check_parser(sub)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
