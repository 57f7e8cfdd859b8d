"""Writing event files: what the callbacks and ``tb-mindspore convert`` write with.

Holds: ``summary.py`` (the ``Summary.Value`` builders: TensorBoard's own formats, our kinds through ``contract/``),
``writer.py`` (``SummaryWriter``: asynchronous, crash-safe event writing; a remote logdir staged locally and uploaded
in parts).

May import: ``io``, ``contract`` (with ``metadata``), ``landscape``; TensorBoard's protos.
"""
