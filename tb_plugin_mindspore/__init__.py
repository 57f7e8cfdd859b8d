"""tb-plugin-mindspore: a TensorBoard tab for MindSpore training runs.

Import-light on purpose: TensorBoard imports this package through its plugin entry point, and an import error here
would stop the whole ``tensorboard`` command. The plugin itself is built in ``loader.MindSporeLoader.load``.

The package is a ladder of layers, each importing only the layers below it (``tests/test_layout.py`` checks it):
``io`` < ``contract`` (with ``metadata.py``) < ``landscape`` < ``writing`` < ``sources`` < ``health`` and ``compare``
(side by side) < ``answers`` < ``server`` (with ``loader.py``) < ``commands`` (with ``cli.py``). Each package's docstring says what it holds and
what it may import; the README's architecture section has the table.
"""

__version__ = "0.1.0"
