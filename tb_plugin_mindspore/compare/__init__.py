"""Port check: a run against its reference (a MindSpore port against the PyTorch original, or any two runs of the
data contract), step by step.

* :mod:`.names`: which layer is which across frameworks (built-in rules, fused weights, shapes, a mapping file);
* :mod:`.tracks`: both runs' quantities on their common steps, layer by mapped layer;
* :mod:`.tolerance`: relative differences, tolerances from the runs' own float noise, the first step each part;
* :mod:`.classes`: the likely class of the difference, with its evidence;
* :mod:`.engine`: :func:`~.engine.compare`, the answer of ``tb-mindspore compare`` (``commands/compare.py``) and of
  the ``compare`` route (``answers/compare.py``).

Pure numpy over two runs' series as the health rules read them (``health.series.RunSeries``, taken as given: this
layer sits beside ``health`` and imports neither it nor anything above; no MindSpore, no torch).

May import: ``contract``, ``io`` and the standard library, numpy.
"""
