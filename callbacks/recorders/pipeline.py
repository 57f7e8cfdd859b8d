"""``Pipeline``: one run's monitoring, driven by an entry point (``TrainMonitor``, ``LoopMonitor``).

It owns the event writer, the step clock (step time, data wait, one-off compile time), the cadence of the points
(core every ``collect_freq`` steps, debug every ``debug_freq``, diagnostic / evaluation every N steps or at epoch
ends) and calls the recorders' hooks (see :mod:`.base`), each one isolated: an exception in a recorder is logged
once and counted in ``errors``, never raised into training.

Entry points call :meth:`start`, then per step :meth:`step_begin` (optional) and :meth:`step_end`, and
:meth:`epoch_begin` / :meth:`epoch_end` when there are epochs, then :meth:`end` and :meth:`close`.
"""

import dataclasses
import os
import signal
import threading
import time
import weakref

from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.writing.writer import SummaryWriter, install_signal_handlers

from ..cells import tiering
from ..common.model_kinds import is_cell
from ..common.util import detect_rank, logger
from .live_health import guard_settings
from .base import HostInterval, Recorder, RunContext, StepRecord, due
from .events import json_value
from .source import parameter_table

__all__ = ["Pipeline"]

_ACTIVE = weakref.WeakSet()        # pipelines of runs in progress (marked interrupted on SIGINT / SIGTERM)
_SIGNALS_DONE = set()


# The clock of the cost of recording (core/monitor_cpu_ms): the training thread's CPU time.
_monitor_clock = time.thread_time

# Parameters of the network that are state, not weights (BatchNorm's moving statistics): never "frozen layers".
_STATE_PARAMS = ("moving_mean", "moving_variance")


def network_of(ctx):
    """The forward network (with its loss) of the run: the training cell's ``network``, or the loop's ``network=``;
    None when neither is known."""
    cell = ctx.cell
    net = getattr(cell, "network", None) if cell is not None else None
    return net if net is not None else ctx.probe_net


def frozen_layers(network, trained, selection):
    """``(params, reasons)``: the parameters of ``network`` the optimizer does not train (``requires_grad=False``,
    or left out of the optimizer) that the layer selection picks, in network order; the monitoring's own
    (``tbms_*``) and BatchNorm's moving statistics are left out. One pass over the parameter list at start."""
    if network is None or not is_cell(network):
        return [], []      # a torch-style module's frozen tensors are not listed
    try:
        params = list(network.get_parameters())
    except Exception:
        return [], []
    trained_ids = {id(p) for p in trained}
    trained_names = {p.name for p in trained}
    candidates = [p for p in params if id(p) not in trained_ids and p.name not in trained_names
                  and not p.name.startswith("tbms_") and not p.name.endswith(_STATE_PARAMS)]
    picked = selection.select_more(candidates)
    return picked, ["requires_grad=False" if not p.requires_grad else "not in the optimizer" for p in picked]


class Pipeline:
    """One run of monitoring. ``recorders_for(settings)`` -> the recorders to run (built at each start)."""

    def __init__(self, settings, recorders_for, owner="TrainMonitor"):
        self.settings = settings
        self.recorders_for = recorders_for
        self.owner = owner
        self.writer = None
        self.notifier = None
        self.errors = 0
        self._reset()

    # -- state -----------------------------------------------------------------------------------------------------
    def _reset(self):
        self.active = False
        self.recorders = []
        self.ctx = None
        self.source = None
        self.last_step = None
        self.last = dict.fromkeys(("core", "debug", "diagnostic", "eval"))
        self.prev_time = None
        self.begin_time = None
        self.compile_ms = 0.0
        self.recorded_kinds = set()   # the kinds of point recorded once (their first compiles: one-off)
        self.batch = None
        self.stop_requested = False
        self.stop_reason = ""
        self.ended = False
        self._times = HostInterval()
        self._time_total = 0.0
        self._time_steps = 0
        self._wait_ms = None
        self._last_outputs = self._last_inputs = None
        self._hooked = {}
        self._hooked_for = None
        # The CPU time of recording the points (the evaluation left out) on the training thread since the last core
        # point, per step: core/monitor_cpu_ms, which other processes on the machine do not inflate.
        self._monitor_cpu = 0.0
        self._process_cpu = None     # process CPU time at the last core point: core/step_cpu_ms

    @property
    def wants_step_begin(self):
        """Whether a recorder asks for ``step_begin`` (its ``on_step_begin``, or the data wait it measures)."""
        return bool(self._subscribers("wants_step_begin"))

    def _subscribers(self, hook):
        """The recorders that define ``hook`` (those that inherit ``Recorder``'s empty one are left out: a step
        then makes no call for nothing); for ``on_step_begin`` only those with ``wants_step_begin``;
        ``"wants_step_begin"``: those that set it. Worked out once per list of recorders."""
        if self._hooked_for is not self.recorders:
            self._hooked, self._hooked_for = {}, self.recorders
        found = self._hooked.get(hook)
        if found is None:
            if hook == "wants_step_begin":
                found = [r for r in self.recorders if r.wants_step_begin]
            else:
                base = getattr(Recorder, hook, None)
                found = [r for r in self.recorders
                         if not isinstance(r, Recorder) or hook in vars(r) or getattr(type(r), hook, None) is not base]
            if hook == "on_step_begin":
                found = [r for r in found if r.wants_step_begin]
            self._hooked[hook] = found
        return found

    def request_stop(self, reason=""):
        self.stop_requested = True
        self.stop_reason = self.stop_reason or str(reason)

    def notify(self, event):
        """Posts a live health event to the webhooks of ``LiveHealth(notify=[...])`` (a background thread;
        never blocks, never raises)."""
        if self.notifier is not None:
            try:
                self.notifier.post(event)
            except Exception:
                pass

    def error(self, where):
        self.errors += 1
        if self.errors == 1:
            logger.exception("tb-mindspore: %s failed at %s; training continues", self.owner, where)

    def _call(self, hook, *args, recorders=None):
        for r in self._subscribers(hook) if recorders is None else recorders:
            try:
                getattr(r, hook)(*args)
            except Exception:
                self.error("%s.%s" % (r.name, hook))

    # -- start -----------------------------------------------------------------------------------------------------
    def start(self, source, step=0, cb_params=None, probe_net=None, batch=None):
        """Opens the writer (rank 0, or every rank with ``all_ranks``), builds the layer registry and the
        recorders, and calls their ``on_start``. Returns False when this rank does not record."""
        self._reset()
        s = self.settings
        rank, rank_size = detect_rank()
        if s.rank is not None:
            rank = s.rank
        # Only rank 0 (or every rank with all_ranks) writes event files; recorders marked every_rank (the per-rank
        # statistics) run on the other ranks too, without a writer.
        writes = rank == 0 or s.all_ranks
        recorders = [r for r in self.recorders_for(s) if writes or getattr(r, "every_rank", False)]
        if not writes and s.live_health is not None and "skip" in s.on_anomaly:
            # Every rank skips the same updates (their gradients are all-reduced), recording or not: otherwise the
            # ranks' weights would part.
            source.guard_updates(*guard_settings(s))
        if not recorders:
            return False
        logdir = s.logdir if rank == 0 else os.path.join(s.logdir, "rank%d" % rank)
        if writes and self.writer is None:
            self.writer = SummaryWriter(logdir, flush_secs=s.flush_secs, max_queue=s.max_queue,
                                        max_file_bytes=s.max_file_bytes, max_run_bytes=s.max_run_bytes)
        if writes and s.notify and self.notifier is None:
            from .notify import Notifier   # lazy: only runs that post to webhooks start its thread

            self.notifier = Notifier(s.notify, run=logdir)
        install_signal_handlers()
        _install_interrupt_marker()
        self.active = True
        self.source = source
        self.batch = batch
        source.reset()      # forget anything accumulated before this run (warm-up calls, the last run)
        params, names = parameter_table(source)
        ctx = RunContext(pipeline=self, settings=s, source=source, optimizer=source.optimizer, rank=rank,
                         logdir=logdir, probe_net=probe_net, cb_params=cb_params, params=params,
                         param_names=names)
        ctx.info.update(rank=rank, rank_size=rank_size)
        self._select_layers(ctx)
        self.ctx = ctx
        self.last_step = int(step)
        for kind in self.last:
            self.last[kind] = int(step)
        self.recorders = recorders
        self._call("on_start", ctx)
        _ACTIVE.add(self)
        self.begin_time = time.perf_counter()
        self._process_cpu = time.process_time()
        return True

    def _select_layers(self, ctx):
        params, names = ctx.params, ctx.param_names
        if not params:
            return
        layers = self.settings.layers
        ctx.layer_index = layers.select_indices(params, names)
        ctx.layer_params = [params[i] for i in ctx.layer_index]
        ctx.layer_names = [names[i] for i in ctx.layer_index]
        if layers.truncated_from:
            logger.info("tb-mindspore: %d parameters match the layer selection; keeping %d evenly spaced ones "
                        "(raise max_layers or narrow layers_include)", layers.truncated_from, len(ctx.layer_params))
        ctx.frozen_params, ctx.frozen_why = frozen_layers(network_of(ctx), params, layers)
        ctx.frozen_names = [p.name for p in ctx.frozen_params]
        if ctx.frozen_names:
            ctx.info["frozen_layers"] = [{"name": n, "why": w} for n, w in zip(ctx.frozen_names, ctx.frozen_why)]
        if not ctx.layer_params and not ctx.frozen_params:
            logger.warning("tb-mindspore: no parameter matches the layer selection %s; per-layer series are off",
                           layers.describe())

    def check_writer(self):
        """A writer closed under a run that goes on (a signal caught by the program): open a new file."""
        w = self.writer
        if w is None or not w.closed or self.ctx is None:
            return
        logger.warning("tb-mindspore: the event file was closed while training went on; recording continues in "
                       "a new file in %s", w.logdir)
        s = self.settings
        self.writer = SummaryWriter(w.logdir, flush_secs=s.flush_secs, max_queue=s.max_queue,
                                    max_file_bytes=s.max_file_bytes, max_run_bytes=s.max_run_bytes)
        for r in self.recorders:
            rewrite = getattr(r, "rewrite", None)
            if rewrite is not None:
                try:
                    rewrite()
                except Exception:
                    self.error("%s.rewrite" % r.name)

    # -- steps -----------------------------------------------------------------------------------------------------
    def shift_steps(self, offset):
        """The run continues an earlier one (a resume): its steps are counted from ``offset``."""
        self.last_step += int(offset)
        for kind in self.last:
            self.last[kind] += int(offset)

    def epoch_begin(self):
        """Work between two epochs is neither waiting for data nor step time: the epoch's first step is timed from
        here (its batch is fetched after this)."""
        if self.active and self.prev_time is not None:
            self.prev_time = time.perf_counter()
        elif self.active:
            self.begin_time = time.perf_counter()

    def leave_out(self, seconds):
        """``seconds`` of work between two steps that is neither waiting for data nor step time (a loop's own
        evaluation or checkpoint, as ``Model.train``'s work between epochs)."""
        if self.active and self.prev_time is not None:
            self.prev_time += float(seconds)

    def step_begin(self, step, data_wait=True):
        """Before the step(s) ending at ``step`` run: the data wait, and the recorders' ``on_step_begin`` (their time
        is monitoring, kept out of the step time)."""
        if not self.active:
            return
        now = time.perf_counter()
        if data_wait and self.prev_time is not None:
            self._wait_ms = (now - self.prev_time) * 1000.0
        self._call("on_step_begin", int(step))
        if self.prev_time is not None:
            self.prev_time += time.perf_counter() - now

    def step_end(self, step, outputs=None, inputs=None):
        """After the step(s) ending at ``step``: timing, the per-step hooks and every point due."""
        if not self.active:
            return
        now = time.perf_counter()
        step = int(step)
        self.check_writer()
        steps = step - self.last_step if self.last_step is not None else 0
        step_ms = None
        if self.prev_time is not None and steps > 0:
            elapsed = now - self.prev_time
            step_ms = elapsed * 1000.0 / steps
            self._times.add(step_ms, steps)
            self._time_total += elapsed
            self._time_steps += steps
        # The first call of a run includes graph compilation: it only starts the clock (core/compile_ms).
        if self.prev_time is None and self.begin_time:
            self.compile_ms += (now - self.begin_time) * 1000.0
        self.prev_time = now
        self.last_step = step
        self._last_outputs, self._last_inputs = outputs, inputs
        try:
            self.source.observe(step, outputs)
        except Exception:
            self.error("step source")
        s = self.settings
        points = set()
        if due(self.last["core"], step, s.collect_freq):
            points.add("core")
        if s.debug and due(self.last["debug"], step, s.debug_freq):
            points.add("debug")
        if s.diagnostic_freq is not None and due(self.last["diagnostic"], step, s.diagnostic_freq):
            points.add("diagnostic")
        if s.eval_dataset is not None and s.eval_freq is not None and due(self.last["eval"], step, s.eval_freq):
            points.add("eval")
        record = StepRecord(step, wall_time=time.time(), step_time_ms=step_ms, data_wait_ms=self._wait_ms,
                            due=frozenset(points), inputs=inputs, outputs=outputs)
        self._wait_ms = None
        self._call("on_step", record)
        self._points(record)
        self._write_compile_ms(step)
        # Monitoring work (evaluation above all) is not training time: the next step is timed from here.
        self.prev_time = time.perf_counter()

    def epoch_end(self, step):
        if not self.active:
            return
        step = int(step)
        s = self.settings
        points = set()
        if s.diagnostic_freq is None and step > self.last["diagnostic"]:
            points.add("diagnostic")
        if s.eval_dataset is not None and s.eval_freq is None and step > self.last["eval"]:
            points.add("eval")
        if points:
            self._points(StepRecord(step, wall_time=time.time(), due=frozenset(points),
                                    inputs=self._last_inputs, outputs=self._last_outputs))

    def _points(self, record):
        cpu = _monitor_clock()
        try:
            self._record_points(record)
        finally:
            self._monitor_cpu += _monitor_clock() - cpu

    def _record_points(self, record):
        step = record.step
        if "core" in record.due:
            cpu, compiles = _monitor_clock(), tiering.compile_time()
            self._read_core(record)
            self.last["core"] = step
            self._call("on_interval", record)
            self._one_off("core", cpu, compiles)
        if "debug" in record.due:
            self.last["debug"] = step
            start, cpu, compiles = time.perf_counter(), _monitor_clock(), tiering.compile_time()
            if "layer_grad_norm" in self.settings.debug:
                record.layer_grad_norm = self.source.layer_grad_norms()
            self._call("on_point", dataclasses.replace(record, due=frozenset(["debug"])))
            if self._one_off("debug", cpu, compiles):
                # The first debug point compiles the monitoring graphs once: one-off time, not step time.
                self.compile_ms += (time.perf_counter() - start) * 1000.0
        for kind in ("diagnostic", "eval"):
            if kind in record.due:
                self.last[kind] = step
                cpu, compiles = _monitor_clock(), tiering.compile_time()
                self._call("on_point", dataclasses.replace(record, due=frozenset([kind])))
                if kind == "eval":     # the user's evaluation, not the cost of recording
                    self._monitor_cpu -= _monitor_clock() - cpu
                else:
                    self._one_off(kind, cpu, compiles)

    def _one_off(self, kind, cpu, compiles):
        """True at the first point of ``kind`` (core, debug, diagnostic), whose CPU time since ``cpu`` is then left
        out of core/monitor_cpu_ms: it compiles that kind's monitoring graphs (on a small GRAPH_MODE transformer the
        first weight norms took 0.6-0.9 s of CPU, the first update ratios 0.6-0.9 s and the loop's first read of the
        step statistics 0.2 s, where the later points took 2-6 ms), a one-off, not the steady cost of recording.
        At a later point, the probe blocks compiled in it since ``compiles`` (``tiering.compile_time()``; op by op
        until then, ``cells/tiering.py``) are left out the same way and written as core/compile_ms."""
        if kind in self.recorded_kinds:
            wall, spent = (now - before for now, before in zip(tiering.compile_time(), compiles))
            self.compile_ms += wall * 1000.0
            self._monitor_cpu -= spent
            return False
        self.recorded_kinds.add(kind)
        self._monitor_cpu -= _monitor_clock() - cpu
        return True

    def _read_core(self, record):
        record.first_step = self.last["core"] + 1
        try:
            self.source.read(record)
        except Exception:
            self.error("step source read")
        if self._time_steps:
            mean_s = self._time_total / self._time_steps
            record.step_time_ms_mean = mean_s * 1000.0
            record.step_time_interval = self._times.interval()
            if self.batch:
                record.throughput = self.batch / mean_s if mean_s > 0 else float("nan")
            self._times.reset()
            self._time_total = 0.0
            self._time_steps = 0
        self._write_monitor_cpu(record.step, record.step - record.first_step + 1)
        self._write_step_cpu(record.step, record.step - record.first_step + 1)

    def _write_step_cpu(self, step, steps):
        """core/step_cpu_ms: the process's CPU time per step since the last core point (every thread: MindSpore's,
        the data pipeline's, the monitor's). Other processes on the machine stretch a step's wall time, not this:
        a step time that rises while this stays is the machine's load, not the training's work."""
        now = time.process_time()
        if self._process_cpu is not None and steps > 0 and self.writer is not None:
            try:
                self.writer.scalar(metadata.STEP_CPU_MS, (now - self._process_cpu) * 1000.0 / steps, step)
            except Exception:
                self.error("step CPU time")
        self._process_cpu = now

    def _write_monitor_cpu(self, step, steps):
        """core/monitor_cpu_ms: the CPU time per step that recording the points took on the training thread since
        the last core point (this point's own work counts in the next interval; work on other threads, the writer's
        or MindSpore's, is not in it, nor the fixed cost of every step, which is
        measured apart in BENCHMARKS.md, nor the first point of each kind, a one-off: see :meth:`_one_off`)."""
        if steps > 0 and self.writer is not None:
            try:
                self.writer.scalar(metadata.MONITOR_CPU_MS, max(self._monitor_cpu, 0.0) * 1000.0 / steps, step)
            except Exception:
                self.error("monitor CPU time")
        self._monitor_cpu = 0.0

    def _write_compile_ms(self, step):
        """One value per step of the one-off time spent there (first step and first debug point may coincide)."""
        if self.compile_ms and self.writer is not None:
            self.writer.scalar(metadata.COMPILE_MS, self.compile_ms, step)
        self.compile_ms = 0.0

    # -- end -------------------------------------------------------------------------------------------------------
    def end(self, step=None, status="finished", reason="", outputs=None, inputs=None):
        """The final points (whatever is not recorded at ``step`` yet), then ``on_end`` with the run end marker.
        ``status`` becomes "stopped" when a recorder asked to stop. Safe to call twice (the second does nothing)."""
        if not self.active or self.ended:
            return
        self.ended = True
        _ACTIVE.discard(self)
        step = int(self.last_step if step is None else step)
        s = self.settings
        points = set()
        if step > self.last["core"]:
            points.add("core")
        if s.debug and step > self.last["debug"]:
            points.add("debug")
        if step > self.last["diagnostic"]:
            points.add("diagnostic")
        if s.eval_dataset is not None and step > self.last["eval"]:
            points.add("eval")
        if points:
            record = StepRecord(step, wall_time=time.time(), due=frozenset(points),
                                inputs=self._last_inputs if inputs is None else inputs,
                                outputs=self._last_outputs if outputs is None else outputs)
            try:
                self._points(record)
            except Exception:
                self.error("end")
            self._write_compile_ms(step)
        if status == "finished" and self.stop_requested:
            status, reason = "stopped", reason or self.stop_reason
        self._call("on_end", metadata.run_end(status, step, time.time(), reason))

    def mark_interrupted(self, reason):
        """From a signal handler: the run end marker ("interrupted") at the last step; the file stays open."""
        if not self.active or self.ended or self.writer is None:
            return
        self.writer.value(_run_end_value(metadata.run_end("interrupted", self.last_step or 0, time.time(), reason)),
                          self.last_step or 0)

    def close(self):
        """Writes everything still queued and closes the event file. Never raises."""
        _ACTIVE.discard(self)
        self.active = False
        self._call("close")
        notifier, self.notifier = self.notifier, None
        if notifier is not None:
            notifier.close()
        writer, self.writer = self.writer, None
        if writer is not None:
            try:
                writer.close()
            except Exception:
                self.error("close")


def _run_end_value(marker):
    return json_value(metadata.RUN_END, metadata.KIND_RUN_END, marker)


def _install_interrupt_marker(signals=(signal.SIGINT, signal.SIGTERM)):
    """On SIGINT / SIGTERM, every run in progress gets an "interrupted" end marker, then the previous handler runs
    (the writer's, which writes everything out). Main thread only, once per process. A signal the process ignores
    gets no handler: the marker would say "interrupted" while training goes on."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in signals:
        if sig in _SIGNALS_DONE:
            continue
        previous = signal.getsignal(sig)
        if previous == signal.SIG_IGN:
            continue    # ignored by the process (a background job's SIGINT): it ends nothing, so no end marker

        def handler(signum, frame, _previous=previous):
            for p in list(_ACTIVE):
                try:
                    p.mark_interrupted("signal %s" % signal.Signals(signum).name)
                except Exception:
                    pass
            if callable(_previous):
                _previous(signum, frame)
            elif _previous != signal.SIG_IGN:
                signal.signal(signum, signal.SIG_DFL)
                os.kill(os.getpid(), signum)

        signal.signal(sig, handler)
        _SIGNALS_DONE.add(sig)
