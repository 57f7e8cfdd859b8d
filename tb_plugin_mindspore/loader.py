"""TensorBoard entry point (``tensorboard_plugins`` group). Imports almost nothing: an import error here would stop
the whole ``tensorboard`` command, so the plugin module is imported inside ``load()``."""

import logging

from tensorboard.plugins import base_plugin

from . import metadata

logger = logging.getLogger(__name__)

# How many points per tag TensorBoard keeps in memory (its reservoir sampling keeps a uniform sample and always the
# newest point). Keeping every point made the server grow with every point written (about 0.7 KB per point on
# the Python loader), so the limits are finite, chosen so that a spike or a NaN is never hidden by the sampling
# on runs of ordinary length:
# * ``mindspore`` (our interval statistics, per-layer vectors, run info, landscapes): 20,000 per tag. Each interval
#   row holds the min / max / NaN count of every step since the previous recorded point, so while a tag's rows
#   are all kept (a run of 200,000 steps at collect_freq=10), every step's extremes and NaNs are in the tab;
# * ``scalars``: 10,000 per tag (TensorBoard's default is 1,000). Longer series are sampled, but on our core tags
#   the band drawn from the interval rows still shows what the sampled line misses.
# Beyond those lengths rows are sampled too (``tb-mindspore check`` still reads every point from the files);
# ``--samples_per_plugin mindspore=0,scalars=100000000`` keeps everything (TensorBoard's own Scalars tab takes the
# scalars value as how many points to send, so not 0). A user's own value for a plugin always wins.
SAMPLE_LIMITS = {metadata.PLUGIN_NAME: 20_000, "scalars": 10_000}


HEALTH_SET_FLAG = "mindspore_health_set"
MINDFORMERS_LOG_FLAG = "mindspore_mindformers_log"


class MindSporeLoader(base_plugin.TBLoader):
    def define_flags(self, parser):
        parser.add_argument(
            "--" + HEALTH_SET_FLAG, action="append", default=[], metavar="RULE.PARAM=VALUE",
            help="MindSpore tab: override a health rule's threshold, as `tb-mindspore check --set` does (repeatable), "
                 "e.g. --%s layer_not_learning.low=1e-5; the Health panel and the heatmap marks both use it."
                 % HEALTH_SET_FLAG)
        parser.add_argument(
            "--" + MINDFORMERS_LOG_FLAG, action="append", default=[], metavar="[RUN=]PATH",
            help="MindSpore tab: a mindformers training log to read as a run's series (per-parameter norms, tokens "
                 "per expert, max attention logits of its PyNative trainer; repeatable). A *.log file in a run "
                 "folder is read without it.")

    def fix_flags(self, flags):
        settings = getattr(flags, HEALTH_SET_FLAG, None)
        if settings:   # a bad setting stops TensorBoard with one line, before it serves anything
            from .health import settings as health_settings   # lazy: the entry point stays import-light

            try:
                health_settings.config_from_settings(settings)
            except ValueError as e:
                raise base_plugin.FlagsError("--%s: %s" % (HEALTH_SET_FLAG, e))
        samples = getattr(flags, "samples_per_plugin", None)
        if not isinstance(samples, dict):
            samples = {}
        for plugin_name, count in SAMPLE_LIMITS.items():
            samples.setdefault(plugin_name, count)
        flags.samples_per_plugin = samples

    def load(self, context):
        try:
            from .server.plugin import MindSporePlugin   # lazy: the entry point stays import-light
        except Exception:
            logger.exception("tb-plugin-mindspore could not be loaded; the MindSpore tab is disabled")
            return None
        return MindSporePlugin(context)
