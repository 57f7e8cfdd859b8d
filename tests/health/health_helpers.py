"""Synthetic RunSeries for the rule tests, and event files with exact tags written by our own writer."""

import numpy as np

from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.health import engine
from tb_plugin_mindspore.health.series import IntervalSeries, LayerSeries, RunSeries, RunState, Series

T0 = 1_700_000_000.0


def series(tag, values, steps=None, dt=1.0, t0=T0):
    values = np.asarray(values, dtype=np.float64)
    steps = np.arange(1, values.size + 1) if steps is None else np.asarray(steps)
    return Series.from_points(tag, steps, t0 + dt * steps.astype(np.float64), values)


def make_run(scalars=None, intervals=None, layers=None, state=None, info=None, histograms=(), name="run",
             dt=1.0):
    """``scalars``: {tag: values or (steps, values)}; ``intervals``: {tag: rows}; ``layers``: {tag: (names, matrix
    or (steps, matrix))}."""
    built = {}
    for tag, spec in (scalars or {}).items():
        if isinstance(spec, tuple):
            built[tag] = series(tag, spec[1], steps=spec[0], dt=dt)
        else:
            built[tag] = series(tag, spec, dt=dt)
    ivs = {tag: IntervalSeries.from_rows(tag, rows) for tag, rows in (intervals or {}).items()}
    lay = {}
    for tag, (names, spec) in (layers or {}).items():
        if isinstance(spec, tuple):
            steps, matrix = spec
        else:
            matrix = np.asarray(spec, dtype=np.float64)
            steps = np.arange(1, matrix.shape[0] + 1)
        steps = np.asarray(steps)
        lay[tag] = LayerSeries.from_rows(tag, names, steps, T0 + dt * steps, np.asarray(matrix, dtype=np.float64))
    if state is None:
        last = max((s.wall_times[-1] for s in built.values() if len(s)), default=T0)
        first = min((s.wall_times[0] for s in built.values() if len(s)), default=T0)
        state = RunState(now=last + 5.0, last_event_time=last, first_event_time=first, last_modified=last,
                         total_bytes=10_000, event_files=1)
    return RunSeries(run=name, scalars=built, intervals=ivs, layers=lay, state=state, info=dict(info or {}),
                     histogram_tags=tuple(histograms))


def healthy_arrays(n=200, seed=0):
    """Loss decaying with mini-batch noise, a steady gradient norm, a cosine LR schedule, steady step time."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    loss = 0.3 + 2.0 * np.exp(-t / 40.0) + rng.normal(0, 0.03, n)
    grad = 1.0 + 0.3 * np.exp(-t / 30.0) + rng.normal(0, 0.08, n)
    lr = 1e-3 * 0.5 * (1 + np.cos(np.pi * t / n))
    lr[:10] = 1e-3 * (t[:10] + 1) / 10.0
    step = 50 + rng.normal(0, 1.5, n)
    wait = 1.0 + np.abs(rng.normal(0, 0.2, n))
    return loss, grad, lr, step, wait


def healthy_run(n=200, seed=0, **kw):
    loss, grad, lr, step, wait = healthy_arrays(n, seed)
    rng = np.random.default_rng(seed + 1)
    eval_steps = np.arange(20, n + 1, 20)
    eval_loss = 0.35 + 2.0 * np.exp(-eval_steps / 40.0) + rng.normal(0, 0.01, eval_steps.size)
    names = ["encoder.0.weight", "encoder.1.weight", "head.weight", "head.bias"]
    ratio_steps = np.arange(10, n + 1, 10)
    # The update ratio follows the applied learning rate (as it does with Adam).
    ratios = np.exp(rng.normal(np.log(1e-3), 0.2, (ratio_steps.size, len(names)))) * (lr[ratio_steps - 1] /
                                                                                       1e-3)[:, None]
    layer_grads = np.exp(rng.normal(np.log(0.3), 0.2, (ratio_steps.size, len(names))))
    scalars = {
        metadata.LOSS: loss, metadata.GRAD_NORM: grad, metadata.LEARNING_RATE: lr,
        metadata.STEP_TIME_MS: step, metadata.DATA_WAIT_MS: wait, metadata.EVAL_LOSS: (eval_steps, eval_loss),
    }
    scalars.update(kw.pop("scalars", {}))
    layers = {metadata.UPDATE_RATIO_LAYERS: (names, (ratio_steps, ratios)),
              metadata.GRAD_NORM_LAYERS: (names, (ratio_steps, layer_grads))}
    layers.update(kw.pop("layers", {}))
    info = {"epochs": 1, "steps_per_epoch": n}
    info.update(kw.pop("info", {}))
    return make_run(scalars=scalars, layers=layers, info=info, **kw)


def findings(run, rule=None, config=None):
    found = engine.check_run(run, config)
    return [f for f in found if rule is None or f.rule == rule]


def serious(run, config=None):
    return [f for f in engine.check_run(run, config) if f.level in ("warn", "error")]


def write_event_run(logdir, scalars=None, layers=None, intervals=None, info=None, wall0=None, dt=1.0):
    """Writes one run with our own SummaryWriter: ``scalars`` {tag: (steps, values)}, ``layers`` {tag: (names,
    steps, matrix)}, ``intervals`` {scalar tag: rows of (step, min, mean, max, count, nonfinite)}."""
    from tb_plugin_mindspore.writing.writer import SummaryWriter

    wall0 = T0 if wall0 is None else wall0
    w = SummaryWriter(str(logdir), flush_secs=0.5)
    try:
        if info is not None:
            w.run_info(info, step=0)
        for tag, (steps, values) in (scalars or {}).items():
            for s, v in zip(steps, values):
                w.scalar(tag, float(v), int(s), wall0 + dt * int(s))
        for tag, (names, steps, matrix) in (layers or {}).items():
            for s, row in zip(steps, matrix):
                w.layers(tag, names, np.asarray(row, dtype=np.float32), int(s), wall0 + dt * int(s))
        for tag, rows in (intervals or {}).items():
            for row in rows:
                w.interval(tag, *row[1:], step=int(row[0]), wall_time=wall0 + dt * int(row[0]))
    finally:
        w.close()
    return w.path
