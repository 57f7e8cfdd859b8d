"""What every part of the callbacks shares: ``util.py`` (rank detection, finding cells, host-side learning rates,
loss values), ``run_dir.py`` (run folders named by time, experiment and key hyperparameters) and
``model_kinds.py`` (what kind of model or optimizer an object is: the one-line errors at construction).

May import: MindSpore, numpy, ``tb_plugin_mindspore``'s ``io`` and ``contract`` layers; nothing else of the
callbacks.
"""
