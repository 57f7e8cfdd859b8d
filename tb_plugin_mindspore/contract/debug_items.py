"""The debug tier's items: what ``Debug(items=[...])`` can switch on, each with the series it writes, its label and
the axis of its charts.

One row per item. The training side's recorder of an item names its row (``Recorder.item``: the callbacks build the
list of items and their recorders from it), and the page's expected debug series and their axes
(``answers/page_contract.py``) are built from the rows, so a new debug item is one row here and one recorder class.
"""

import collections

from .. import metadata as md

# name: the ``Debug(items=...)`` word; label: what the page calls it; tags / prefixes: the series it writes;
# axis: ``(what is measured, unit)`` of those series' charts (None: not a scalar chart, e.g. histograms).
DebugItem = collections.namedtuple("DebugItem", "name label tags prefixes axis")

UPDATE_RATIO = DebugItem("update_ratio", "update ratio", (md.UPDATE_RATIO_LAYERS,), (), ("update ratio ‖Δw‖/‖w‖", ""))
LAYER_GRAD_NORM = DebugItem("layer_grad_norm", "per-layer gradient norm", (md.GRAD_NORM_LAYERS,), (),
                            ("gradient L2 norm", ""))
ACTIVATIONS = DebugItem("activations", "activation histograms", (), (md.ACTIVATION_PREFIX,), None)
DATA_WAIT = DebugItem("data_wait", "data wait time", (md.DATA_WAIT_MS,), (), ("data wait", "ms"))
ATTENTION_LOGITS = DebugItem("attention_logits", "largest attention logit",
                             (md.ATTENTION_MAX_LOGIT, md.ATTENTION_MAX_LOGIT_LAYERS), (),
                             ("attention logit q·k/√d", ""))

ITEMS = (UPDATE_RATIO, LAYER_GRAD_NORM, ACTIVATIONS, DATA_WAIT, ATTENTION_LOGITS)   # in the order they run
NAMES = tuple(item.name for item in ITEMS)
