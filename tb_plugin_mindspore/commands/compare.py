"""``tb-mindspore compare RUN REFERENCE``: a run against its reference (a MindSpore port against the PyTorch
original), step by step: which quantity parts first, at which step, in which layers, and the likely class.

Exit status: 0 when the runs match, 1 when they part, 2 with a one-line reason on bad input (a missing folder, a
folder of several runs, nothing recorded by both, a bad mapping file).
"""

import json
import os
import sys

from ..compare.engine import compare
from ..compare.names import MappingError, load_mapping
from ..health.sources import runs_from_logdir

PROG = "tb-mindspore"
EXIT_MATCH, EXIT_PART, EXIT_BAD_INPUT = 0, 1, 2


class CompareInputError(ValueError):
    """Bad input for ``compare``: a one-line reason."""


def add_compare_parser(subparsers):
    """Registers ``compare`` on an ``argparse`` subparsers object."""
    p = subparsers.add_parser(
        "compare",
        help="compare a run with its reference (a MindSpore port against the PyTorch original): the first step, "
             "quantity and layer where they part, and the likely cause",
        description="Aligns the steps of two runs written in this plugin's data contract (MindSpore callbacks, "
                    "TorchMonitor, TrainerMonitor) or plain TensorBoard logs (train/loss, train/grad_norm, ...), "
                    "maps their layer names (MindSpore gamma/beta/embedding_table, mindformers Llama names "
                    "against PyTorch / Hugging Face names), sets tolerances from the runs' own float noise and "
                    "reports, in order, which quantity parts first at which step (learning rate, loss, gradient "
                    "norm, a layer's gradient norm, a layer's update ratio, weight norms, eval loss), the first "
                    "layers, and the likely class with its evidence.",
        epilog="Exit status: 0 when the runs match, 1 when they part, 2 on bad input. JSON: README "
               "\"Check a port from PyTorch\".",
    )
    p.add_argument("run", metavar="RUN", help="the run folder to check (e.g. the MindSpore port)")
    p.add_argument("reference", metavar="REFERENCE", help="the reference run folder (e.g. the PyTorch original)")
    p.add_argument("--noise", metavar="RUN",
                   help="the reference trained once more (another thread count, device or nondeterministic "
                        "kernel): their difference sets the float-noise tolerance (default: the first steps)")
    p.add_argument("--mapping", metavar="FILE",
                   help="JSON or YAML file of layer name pairs / rules the built-in rules miss (README)")
    p.add_argument("--offset", type=int, default=None,
                   help="add this to the run's steps before aligning (default: found from the loss: -1, 0 or +1)")
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: %(default)s)")
    p.set_defaults(func=run_compare)
    return p


def read_run(path, what="RUN"):
    """The one run of a folder (``RunSeries``), read as the tab reads it; raises :class:`CompareInputError`."""
    if not path:
        raise CompareInputError("%s is empty" % what)
    local = "://" not in str(path)
    if local and not os.path.exists(path):
        raise CompareInputError("%s %s does not exist" % (what, path))
    if local and not os.path.isdir(path):
        raise CompareInputError("%s %s is not a folder (give the run's folder)" % (what, path))
    runs = [r for r in runs_from_logdir(path) if r.scalars or r.layers]
    if not runs:
        raise CompareInputError("%s %s holds no series to compare (a loss, learning rate, gradient norm, weight "
                                "norm or per-layer series, under the callbacks' tags, mindformers' or plain names "
                                "such as train/loss)" % (what, path))
    own = [r for r in runs if r.run == "."]
    if own:
        return own[0]
    if len(runs) == 1:
        return runs[0]
    raise CompareInputError("%s %s holds %d runs (%s): give one run's folder"
                            % (what, path, len(runs), ", ".join(r.run for r in runs[:5])))


def compare_paths(run_path, reference_path, noise_path=None, mapping_path=None, offset=None):
    """The comparison JSON of two run folders; raises :class:`CompareInputError` on bad input."""
    mapping = None
    if mapping_path:
        try:
            mapping = load_mapping(mapping_path)
        except MappingError as e:
            raise CompareInputError(str(e)) from None
    run = read_run(run_path, "RUN")
    reference = read_run(reference_path, "REFERENCE")
    noise = read_run(noise_path, "--noise") if noise_path else None
    result = compare(run, reference, mapping_file=mapping, noise=noise, offset=offset,
                     names=(run_path, reference_path, noise_path))
    if result["verdict"] == "nothing_to_compare":
        raise CompareInputError("%s and %s record no quantity in common (the loss, learning rate, gradient norm, "
                                "layer series or weight norms)" % (run_path, reference_path))
    return result


def run_compare(args):
    try:
        result = compare_paths(args.run, args.reference, args.noise, args.mapping, args.offset)
    except CompareInputError as e:
        print("%s compare: error: %s" % (PROG, e), file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.format == "json":
        print(json.dumps(result, indent=1, sort_keys=False))
    else:
        print(format_text(result))
    return EXIT_PART if result["verdict"] == "part" else EXIT_MATCH


def _layers(entry, limit=4):
    layers = entry.get("layers") or []
    if not layers:
        return ""
    more = " +%d" % (len(layers) - limit) if len(layers) > limit else ""
    return " (" + ", ".join(layers[:limit]) + more + ")"


def format_text(result):
    """The comparison as text for a terminal."""
    lines = []
    head = "%s against %s" % (result["run"], result["reference"])
    if result["verdict"] == "match":
        lines.append("MATCH  %s: every common quantity stays within its tolerance (steps %s-%s)"
                     % (head, result["alignment"]["first_step"], result["alignment"]["last_step"]))
        if result.get("drift"):
            d = result["drift"]
            lines.append("drift: %s is more than %g%% apart from step %d on, grown smoothly from float noise (no "
                         "step where it jumps): not a porting difference" % (d["quantity"], 100 * d["level"],
                                                                          d["step"]))
    else:
        first = result["first"]
        lines.append("PART   %s: %s parts first, at step %d%s" % (head, first["quantity"], first["step"],
                                                                 _layers(first)))
        likely = result["likely"]
        if likely:
            side = " (in the %s)" % likely["side"] if likely.get("side") else ""
            lines.append("likely: %s%s [%s confidence]" % (likely["title"], side, likely["confidence"]))
            for e in likely["evidence"]:
                lines.append("  - " + e)
            lines.append("  what to do: " + likely["advice"])
        lines.append("in order:")
        for e in result["order"]:
            lines.append("  step %-7d %-18s difference %-9s > tolerance %s%s"
                         % (e["step"], e["quantity"], e["difference"], e["tolerance"], _layers(e)))
    lines.append("quantities:")
    for q in result["quantities"]:
        lines.append("  %-18s %6d common steps %s  %s" % (
            q["quantity"], q["steps"], ("%d column%s" % (q["columns"], "" if q["columns"] == 1 else "s")).ljust(11),
            "parts at step %d" % q["first_step"] if q["first_step"] is not None else
            "matches (largest difference %s, tolerance %s)" % (q["max_difference"], q["tolerance"]["median"])))
    for m in result["missing"]:
        lines.append("  %-18s only in the %s: not compared" % (m["quantity"], m["only_in"]))
    if result["alignment"]["offset"]:
        lines.append("steps: the run's steps shifted by %+d to match the reference's" % result["alignment"]["offset"])
    lines.extend(format_mapping(result["mapping"]))
    return "\n".join(lines)


def format_mapping(mapping):
    lines = []
    pairs = mapping["pairs"]
    if not (pairs or mapping["unmapped_run"] or mapping["unmapped_reference"]):
        return lines
    renamed = [p for p in pairs if p["rule"] != "same name"]
    lines.append("layers: %d pairs (%d by name, %d renamed)" % (len(pairs), len(pairs) - len(renamed), len(renamed)))
    for p in renamed[:20]:
        lines.append("  %s -> %s  [%s%s]" % (" + ".join(p["run"]), " + ".join(p["reference"]), p["rule"],
                                            ": " + "; ".join(p["notes"]) if p["notes"] else ""))
    if len(renamed) > 20:
        lines.append("  ... %d more" % (len(renamed) - 20))
    for key, label in (("unmapped_run", "run layers with no reference layer"),
                       ("unmapped_reference", "reference layers with no run layer")):
        if mapping[key]:
            lines.append("  %s (not compared; --mapping pairs them): %s" % (label, ", ".join(mapping[key][:12])
                                                                          + (" ..." if len(mapping[key]) > 12 else "")))
    for m in mapping["shape_mismatches"]:
        lines.append("  shapes disagree, not compared: %s / %s: %s" % (" + ".join(m["run"]),
                                                                      " + ".join(m["reference"]), m["note"]))
    return lines
