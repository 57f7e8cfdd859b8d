"""tb-plugin-mindspore: a TensorBoard tab for MindSpore training runs.

Import-light on purpose: TensorBoard imports this package through its plugin entry point, and an import error here
would stop the whole ``tensorboard`` command. The plugin itself is built in ``loader.MindSporeLoader.load``.
"""

__version__ = "0.1.0"
