"""Every way points come in: event files, MindSpore's ``*_MS`` files, rank files, TensorBoard's data provider.

The one door is ``logdir.py``: a ``Sources`` per logdir answers ``series(run, tag)`` (a ``Timeline``: the final
timeline, its restarts, its interval band by name), listings and freshness tokens; every reader of points holds one.
Behind it, the readers (``event_series.py`` with ``series_store.py``, the store's columns, the restart rule and the
min/max pyramid: every point of a run's event files, read through ``io.records.RecordFile``; ``ms_files.py`` (their
reader ``MsFile`` and the messages decoded) / ``ms_lineage.py`` / ``ms_logdir.py``: ``*_MS`` files;
``ms_provider.py``: them as a data provider merged with TensorBoard's; ``points.py``: every stored point through
TensorBoard's provider; ``clusters.py`` / ``cluster_ranks.py``: where clusters are, their rank files and
``rank_<k>`` folders; ``event_logdir.py`` / ``event_provider.py``: every run's event files read whole as a data
provider, what the commands load instead of TensorBoard's loader), the listings and freshness tokens the answers are
kept by and one computation shared by identical requests (``series_cache.py``), what a logdir holds or lacks
(``logdir_status.py``), and the watch that keeps TensorBoard's Python loader reloading (``reload_watch.py``).

May import: ``io``, ``contract`` (with ``metadata``), ``landscape``, ``writing``; TensorBoard's data provider API.
"""
