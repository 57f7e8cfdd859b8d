"""The ``tb-mindspore`` subcommands, one module each: ``check.py`` (with ``logdir_check.py``, its pool of
processes), ``compare.py`` (a run against its reference), ``convert.py``, ``report.py``, ``doctor.py``. ``tb_plugin_mindspore.cli`` (at the package root, the
console script) parses the command line and calls them.

May import: every layer of the server side; ``tb_mindspore_callbacks`` only inside a function (it imports
MindSpore, which only ``demo`` needs: start-up cost).
"""
