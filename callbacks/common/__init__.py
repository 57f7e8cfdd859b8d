"""What every part of the callbacks shares: ``util.py`` (rank detection, finding cells, host-side learning rates,
loss values) and ``run_dir.py`` (run folders named by time, experiment and key hyperparameters).

May import: MindSpore, numpy, ``tb_plugin_mindspore``'s ``io`` and ``contract`` layers; nothing else of the
callbacks.
"""
