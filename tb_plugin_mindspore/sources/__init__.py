"""Every way points come in: event files, MindSpore's ``*_MS`` files, rank files, TensorBoard's data provider.

Holds the readers (``event_series.py`` with ``series_store.py`` / ``pyramid.py``: every point of a run's event
files; ``ms_files.py`` / ``ms_lineage.py`` / ``ms_logdir.py``: ``*_MS`` files; ``ms_provider.py``: them as a data
provider merged with TensorBoard's; ``points.py``: every stored point through TensorBoard's provider;
``cluster_ranks.py``: rank files and ``rank_<k>`` folders), the listings and freshness tokens the answers are kept
by (``series_cache.py``), and what a logdir holds or lacks (``logdir_status.py``, ``safe_view.py``).

May import: ``io``, ``contract`` (with ``metadata``), ``landscape``, ``writing``; TensorBoard's data provider API.
"""
