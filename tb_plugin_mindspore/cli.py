"""The ``tb-mindspore`` command: ``demo`` (train a tiny model, record it, open TensorBoard) and the other tools.

Every subcommand has ``--help``, exits non-zero on failure and prints a one-line reason on bad input.
"""

import argparse
import os
import signal
import socket
import sys
import time

from .commands import check, compare, convert, doctor, report

PROG = "tb-mindspore"


class CliError(Exception):
    """A failure with a one-line reason for the user; exit status 2."""


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("must be a positive integer, got %r" % text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be a positive integer, got %r" % text)
    return value


def _steps(text):
    value = _positive_int(text)
    if value < 2:
        raise argparse.ArgumentTypeError("must be at least 2 (one step to compile, one to record), got %r" % text)
    return value


def _port(text):
    value = _positive_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError("must be a TCP port (1-65535), got %r" % text)
    return value


def port_is_free(port, host="127.0.0.1"):
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


# -- demo ---------------------------------------------------------------------------------------------------------
def _add_demo(sub):
    p = sub.add_parser(
        "demo",
        help="train a small transformer on synthetic data, record it, and open TensorBoard with the MindSpore tab",
        description="Trains a 2-layer transformer classifier (mindspore.nn, synthetic data, no downloads) while "
                    "TrainMonitor records it under LOGDIR/<date>_demo_<hparams>/ with a loss landscape, trains it "
                    "again with a learning rate 1000x too high and no gradient clipping (the Health panel names "
                    "the problem), records a short run with MindSpore's own SummaryCollector (*_MS files), then "
                    "serves TensorBoard.",
    )
    p.add_argument("--logdir", default="./summary_log", help="root folder for run folders (default: %(default)s)")
    p.add_argument("--steps", type=_steps, default=None,
                   help="training steps of the healthy run (default: 600; the whole demo is ready in under two minutes "
                        "on an idle 2-core machine); the run with the learning rate too high takes half as many")
    p.add_argument("--port", type=_port, default=6006, help="TensorBoard port (default: %(default)s)")
    p.add_argument("--no-serve", action="store_true", help="only train and record; do not start TensorBoard")
    p.set_defaults(func=_run_demo)


def _run_demo(args):
    if not args.no_serve and not port_is_free(args.port):
        raise CliError("port %d is already in use; pass --port to pick another one" % args.port)
    import importlib.util

    missing = CliError('the demo trains a MindSpore model: pip install "tb-plugin-mindspore[mindspore]"')
    if importlib.util.find_spec("mindspore") is None:
        raise missing
    print("%s demo: loading MindSpore (a few seconds on an idle machine, a minute or more on a busy one)..." % PROG,
          file=sys.stderr, flush=True)
    started = time.perf_counter()
    try:
        import mindspore
    except ImportError:
        raise missing
    from tb_mindspore_callbacks import demo   # lazy: MindSpore is imported only when the demo runs

    print("%s demo: MindSpore %s loaded in %.0f s" % (PROG, getattr(mindspore, "__version__", "?"),
                                                    time.perf_counter() - started), file=sys.stderr, flush=True)

    steps = demo.DEFAULT_STEPS if args.steps is None else args.steps
    try:
        demo.run_full_demo(root=args.logdir, steps=steps, log=lambda text: print(text, flush=True))
    except demo.DemoInterrupted as e:
        print("%s demo: %s" % (PROG, e), file=sys.stderr, flush=True)
        return 130
    if args.no_serve:
        return 0
    return serve(args.logdir, args.port)


def serve(logdir, port):
    """Runs TensorBoard in this process (blocks until Ctrl-C)."""
    from tensorboard import default, program

    tb = program.TensorBoard(plugins=default.get_plugins())
    tb.configure(argv=["tensorboard", "--logdir", os.path.abspath(logdir), "--port", str(port)])
    print("Open http://localhost:%d/#mindspore (Ctrl-C to stop)" % port, flush=True)
    # MindSpore's runtime (after the demo's training) turns Ctrl-C into SIGTERM; give Ctrl-C back to Python so it
    # stops the server quietly instead of through TensorBoard's "caught SIGTERM" exit (status 143).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        tb.main()
    except KeyboardInterrupt:
        pass
    return 0


# -- entry point --------------------------------------------------------------------------------------------------
def build_parser():
    parser = argparse.ArgumentParser(prog=PROG, description="TensorBoard tools for MindSpore training runs.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    _add_demo(sub)
    convert.add_convert_parser(sub)
    check.add_check_parser(sub)
    compare.add_compare_parser(sub)
    doctor.add_doctor_parser(sub)
    report.add_report_parser(sub)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except CliError as e:
        print("%s %s: error: %s" % (PROG, args.command, e), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("%s %s: interrupted" % (PROG, args.command), file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
