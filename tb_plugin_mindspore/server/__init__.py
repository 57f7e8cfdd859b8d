"""The TensorBoard plugin: HTTP routes only (``plugin.py``), each a thin call into ``answers``.

TensorBoard reaches it through ``tb_plugin_mindspore.loader`` (the entry point, kept at the package root), which
imports ``plugin.py`` only when TensorBoard loads the tab.

May import: ``answers`` and everything below.
"""
