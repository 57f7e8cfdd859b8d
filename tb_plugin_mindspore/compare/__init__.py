"""Port check: a run against its reference (a MindSpore port against the PyTorch original, or any two runs of the
data contract), step by step.

* :mod:`.names`: which layer is which across frameworks (built-in rules, fused weights, shapes, a mapping file);
* :mod:`.tracks`: both runs' quantities on their common steps, layer by mapped layer;
* :mod:`.tolerance`: relative differences, tolerances from the runs' own float noise, the first step each part;
* :mod:`.classes`: the likely class of the difference, with its evidence;
* :mod:`.engine`: :func:`~.engine.compare`, the answer of ``tb-mindspore compare`` and of the ``compare`` route;
* :mod:`.cli`: the command.

Pure numpy over the health rules' :class:`~tb_plugin_mindspore.health.series.RunSeries`; no MindSpore, no torch.
"""
