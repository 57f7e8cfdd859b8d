"""The data contract, both directions: per kind of series, the writer's builder next to the reader's decoder.

As in TensorBoard's own plugins (``<plugin>/metadata.py`` + ``summary.py``), each module here holds, for one kind
of our plugin's series, the ``Summary.Value`` builder the callbacks write with and the named decoder every reader
(routes, health rules, ``check``, ``convert``) reads with:

* :mod:`.interval`: interval statistics (``IntervalStats``: min, mean, max, count, nonfinite) and the
  ``[step, min, mean, max, count, nonfinite]`` rows of the JSON routes;
* :mod:`.layers`: per-layer vectors; :mod:`.run_info`: run information (with ``lr_config``);
  :mod:`.landscape`: loss landscapes; :mod:`.tensor`: tensors with their dtype;
  :mod:`.health_event`: live health events; :mod:`.run_end`: the run end marker;
* :mod:`.content`: our plugin content (parse, kind) and "our series of this kind" in a provider listing;
* :mod:`.vocabulary`: the one table of tag vocabularies (ours, mindformers', SummaryCollector's, plain names) that
  tiering (``vocabulary.tier_of``), the health rules' quantities and the dashboard's per-parameter families read;
* :mod:`.debug_items`: the debug tier's items (name, label, tags, axis); :mod:`.rank_file`: the per-rank statistics
  file.

Tag names stay in :mod:`tb_plugin_mindspore.metadata`. Submodules are imported on first use, so
``from tb_plugin_mindspore.contract import vocabulary`` imports only the standard library; builders import
TensorBoard's protos when first called.

May import: ``tb_plugin_mindspore.metadata`` (the names, at the package root, part of this layer) and ``io``;
the standard library and numpy, TensorBoard's protos when a builder is first called.
"""

import importlib

_SUBMODULES = ("content", "debug_items", "health_event", "interval", "landscape", "layers", "rank_file", "run_end",
               "run_info", "tensor", "vocabulary")


def __getattr__(name):
    if name in _SUBMODULES:   # lazy: start-up cost (``contract.vocabulary`` alone imports only the standard library)
        return importlib.import_module("." + name, __name__)
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


__all__ = list(_SUBMODULES)
