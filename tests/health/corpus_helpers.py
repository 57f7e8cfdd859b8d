"""Runs a health corpus command (``bench/health_corpus.py``) in a child process, as the corpus runs, and reads the
results it judged."""

import json
import os
import sys
import warm

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def corpus_results(out, args, timeout):
    """``bench/health_corpus.py ARGS --out OUT``: asserts it succeeded and reported no errors (its last line, one
    JSON object); returns ``{case: result}`` from ``OUT/results``."""
    proc = warm.run([sys.executable, os.path.join(ROOT, "bench", "health_corpus.py")] + list(args) +
                    ["--out", str(out)], capture_output=True, text=True, timeout=timeout, cwd=str(out),
                    env=dict(os.environ, GLOG_v="3"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    last = json.loads(proc.stdout.strip().splitlines()[-1])
    assert last["errors"] == [], proc.stdout[-3000:]
    return {r["case"]: r for r in (json.load(open(os.path.join(out, "results", n)))
                                   for n in os.listdir(os.path.join(out, "results")))}
