"""TensorBoard entry point (``tensorboard_plugins`` group). Imports almost nothing: an import error here would stop
the whole ``tensorboard`` command, so the plugin module is imported inside ``load()``."""

import logging

from tensorboard.plugins import base_plugin

from . import metadata

logger = logging.getLogger(__name__)

# Keep every recorded point of our series and of scalars: the dashboard downsamples itself, keeping spikes,
# whereas TensorBoard's reservoir sampling (1000 scalars per tag by default) silently drops steps.
# For ingestion 0 means "keep all", but TensorBoard's own Scalars tab also reads the scalars hint as the number of
# points to return, and 0 would make it return none: so scalars get a count no run reaches instead.
# A user's own --samples_per_plugin value for a plugin always wins.
KEEP_ALL_SCALARS = 10 ** 9
SAMPLES_KEEP_ALL = {metadata.PLUGIN_NAME: 0, "scalars": KEEP_ALL_SCALARS}


class MindSporeLoader(base_plugin.TBLoader):
    def fix_flags(self, flags):
        samples = getattr(flags, "samples_per_plugin", None)
        if not isinstance(samples, dict):
            samples = {}
        for plugin_name, count in SAMPLES_KEEP_ALL.items():
            samples.setdefault(plugin_name, count)
        flags.samples_per_plugin = samples

    def load(self, context):
        try:
            from .plugin import MindSporePlugin
        except Exception:
            logger.exception("tb-plugin-mindspore could not be loaded; the MindSpore tab is disabled")
            return None
        return MindSporePlugin(context)
