"""Core tier: loss, gradient norm, applied learning rate(s), loss scale, step time and throughput, with the interval
statistics of every step between two points (``core/*`` and ``interval/core/*``)."""

from tb_plugin_mindspore import metadata

from .base import Recorder

__all__ = ["CoreRecorder"]


class CoreRecorder(Recorder):
    """Writes the core tier at every core point."""

    name = "core"

    def on_start(self, ctx):
        self.ctx = ctx

    def on_interval(self, r):
        w = self.ctx.writer
        if w is None:
            return
        step, wall = r.step, r.wall_time
        w.scalar(metadata.LOSS, r.loss, step, wall)
        if r.loss_interval is not None:
            w.interval(metadata.LOSS, *r.loss_interval.fields(), step=step, wall_time=wall)
        if r.grad_interval is not None:
            w.scalar(metadata.GRAD_NORM, r.grad_norm, step, wall)
            w.interval(metadata.GRAD_NORM, *r.grad_interval.fields(), step=step, wall_time=wall)
        if r.loss_scale is not None:
            w.scalar(metadata.LOSS_SCALE, r.loss_scale, step, wall)
            w.scalar(metadata.OVERFLOW_STEPS, r.overflow_steps, step, wall)
        if r.lrs:
            w.scalar(metadata.LEARNING_RATE, r.lrs[0], step, wall)
            if len(r.lrs) > 1:
                for i, value in enumerate(r.lrs):
                    w.scalar(metadata.learning_rate_group_tag(i), value, step, wall)
        if r.step_time_ms_mean is not None:
            w.scalar(metadata.STEP_TIME_MS, r.step_time_ms_mean, step, wall)
            w.interval(metadata.STEP_TIME_MS, *r.step_time_interval.fields(), step=step, wall_time=wall)
            if r.throughput is not None:
                w.scalar(metadata.THROUGHPUT, r.throughput, step, wall)
