"""Debug tier: milliseconds each step waited for its batch (``debug/data_wait_ms`` and its interval): from the
previous step's end (or the epoch's start) to this step's begin; monitoring and epoch-end work left out."""

from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.contract import debug_items

from .base import HostInterval, Recorder

__all__ = ["DataWaitRecorder"]


class DataWaitRecorder(Recorder):
    item = debug_items.DATA_WAIT
    name = item.name
    wants_step_begin = True

    def on_start(self, ctx):
        self.ctx = ctx
        self.waits = HostInterval()

    def on_step(self, r):
        if r.data_wait_ms is not None:
            self.waits.add(r.data_wait_ms)

    def on_point(self, r):
        if "debug" not in r.due or self.ctx.writer is None or not self.waits.count:
            return
        waits = self.waits.interval()
        self.ctx.writer.scalar(metadata.DATA_WAIT_MS, waits.mean, r.step)
        self.ctx.writer.interval(metadata.DATA_WAIT_MS, *waits.fields(), step=r.step)
        self.waits.reset()
