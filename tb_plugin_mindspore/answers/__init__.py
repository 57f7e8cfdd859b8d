"""One module per route answer: what the tab's HTTP routes (and ``tb-mindspore report``) answer, as JSON-ready data.

Holds: ``runs.py`` (``runs`` / ``tags``), ``scalars.py`` with ``downsample.py`` (``scalars`` /
``scalars_batch``), ``layers.py``, ``histograms.py``, ``landscapes.py``, ``run_info.py``, ``media.py``,
``cluster.py``, ``health.py`` (the ``health`` answers kept per run), ``compare.py`` (a run against its reference),
``problems.py`` (the ``status`` route's warnings), ``page_contract.py`` (the ``contract`` route), ``encode.py``
(compact JSON of the answers, and ``ResponseCache``: the answers kept while their data is unchanged).

May import: ``health``, ``compare``, ``sources`` and everything below them; never ``server`` or ``commands``.
"""
