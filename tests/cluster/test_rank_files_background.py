"""The rank files read in the background (``sources.clusters.Registry.start``): a health check after a reload finds
the appended rows read and judges the state that reload left (unchanged by the reloads that follow), bad rank files
and failing listeners never end the reading thread, the cluster rules judged once per state give the same findings
as judged afresh, and the Health panel of a real ``tensorboard`` after an append gives the findings ``tb-mindspore
check`` gives on the same files."""

import json
import os
import sys
import time

import numpy as np
import pytest

from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.contract import rank_file
from tb_plugin_mindspore.health import engine
from tb_plugin_mindspore.health.rules import cluster as cluster_rules
from tb_plugin_mindspore.health.series import RunSeries, RunState
from tb_plugin_mindspore.sources import clusters
from tb_plugin_mindspore.sources.cluster_ranks import SOURCE_RANK_FILES

from cluster_data import cluster_columns, write_cluster, write_rank_file
import warm

ROW = rank_file.record_dtype(metadata.RANK_FIELDS)


def rank_path(run_dir, rank):
    return os.path.join(str(run_dir), metadata.CLUSTER_DIR, "rank%d%s" % (rank, metadata.RANK_FILE_SUFFIX))


def append_rows(path, steps, walls, columns):
    rec = np.zeros(len(steps), dtype=ROW)
    rec["step"], rec["wall_time"] = steps, walls
    for f in metadata.RANK_FIELDS:
        rec[f] = columns.get(f, np.full(len(steps), np.nan))
    with open(path, "ab") as fh:
        fh.write(rec.tobytes())


def write_split(run_dir, ranks, steps, cut, **faults):
    """A cluster whose rank files hold the rows before step ``cut``; returns ``append()``, which appends the rest
    (the same rows a file written at once holds)."""
    data = cluster_columns(ranks, steps, **faults)
    for r, (s, w, cols) in data.items():
        keep = s < cut
        write_rank_file(rank_path(run_dir, r), r, s[keep], w[keep], {f: v[keep] for f, v in cols.items()},
                        host="node%d" % (r // 4), rank_size=ranks)

    def append():
        for r, (s, w, cols) in data.items():
            rest = s >= cut
            if rest.any():
                append_rows(rank_path(run_dir, r), s[rest], w[rest], {f: v[rest] for f, v in cols.items()})
    return append


def wait_for(predicate, timeout=20.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def last_steps(view):
    """The last step of each rank (in rank order), None for a rank without rows."""
    return [int(r.arrays()[0][-1]) if r.arrays()[0].size else None for r in sorted(view.ranks, key=lambda r: r.rank)]


def test_a_check_judges_the_last_reload_and_the_reader_reads_what_is_appended(tmp_path):
    run = tmp_path / "job"
    append = write_split(run, 8, np.arange(1, 301), cut=201, stop=(7, 150))
    members = [(r, rank_path(run, r)) for r in range(8)]
    registry = clusters.Registry()
    registry.start(30.0)      # a pass at once for the clusters asked for, then one every 30 s (or when woken)
    try:
        assert wait_for(lambda: registry.passes >= 1)       # the first pass (nothing asked for yet) is over
        first = registry.view(str(run), "job", SOURCE_RANK_FILES, members)   # asked for the first time: read here
        assert last_steps(first) == [200] * 7 + [150]
        before = first.tail(5)
        read_first = sum(r.bytes_read for r in registry.get(str(run), "job", SOURCE_RANK_FILES, members).ranks)
        append()
        # the files changed, but a check judges what the last reload left: nothing is read in the request
        again = registry.view(str(run), "job", SOURCE_RANK_FILES, members)
        assert again.token == first.token and last_steps(again) == last_steps(first)
        passes = registry.passes
        registry._wake.set()        # the reader's next pass (a reload interval later in a server)
        assert wait_for(lambda: registry.passes > passes)
        data = registry.get(str(run), "job", SOURCE_RANK_FILES, members)
        assert data.reloaded_at is not None and not data.pending()
        new = registry.view(str(run), "job", SOURCE_RANK_FILES, members)
        assert new.token != first.token and last_steps(new) == [300] * 7 + [150]
        assert sum(r.bytes_read for r in data.ranks) - read_first == 7 * 100 * ROW.itemsize   # what was appended
        # the state a check held is unchanged by the reload: its rows, its alignment, its non-finite counts
        assert last_steps(first) == [200] * 7 + [150] and first.tail(5) is before
        assert [int(s) for s in first.tail(5)[1]] == [196, 197, 198, 199, 200]
        assert [int(s) for s in new.tail(5)[1]] == [296, 297, 298, 299, 300]
        assert first.rank_columns("host_memory_mb", present=False)[0][2] == 0
        # equal to a cluster read whole from the files as they are now
        whole = clusters.Registry().view("other", "job", SOURCE_RANK_FILES, members)
        for a, b in zip(new.ranks, whole.ranks):
            for x, y in zip(a.arrays()[:2], b.arrays()[:2]):
                np.testing.assert_array_equal(x, y)
    finally:
        registry.stop()
    assert registry._thread is None


def test_bad_rank_files_and_failing_listeners_never_end_the_reading_thread(tmp_path):
    run = tmp_path / "job"
    append = write_split(run, 4, np.arange(1, 101), cut=51)
    bad = {
        4: b"not a rank file at all" * 10,                                          # garbage header
        5: rank_file.header_bytes({"rank": 5, "rank_size": 8, "host": "node1", "local_rank": None, "pid": 0,
                                   "start_time": 0.0, "collect_freq": 1, "fields": list(metadata.RANK_FIELDS)})
        + b"\xff" * (ROW.itemsize * 3 + 7),                                        # impossible rows, a torn one
        6: b"",                                                                     # empty (being created)
    }
    for r, content in bad.items():
        with open(rank_path(run, r), "wb") as fh:
            fh.write(content)
    os.mkfifo(rank_path(run, 7))                                                    # a FIFO: never opened
    members = [(r, rank_path(run, r)) for r in range(8)] + [(8, rank_path(run, 8))]  # rank 8: no file
    registry = clusters.Registry()
    calls = []

    def failing(folder, data):
        calls.append(data.version)
        raise RuntimeError("a listener that fails")

    registry.add_listener(failing)
    registry.start(0.05)
    try:
        view = registry.view(str(run), "job", SOURCE_RANK_FILES, members)
        assert last_steps(view)[:4] == [50] * 4
        append()
        with open(rank_path(run, 4), "ab") as fh:         # more garbage
            fh.write(os.urandom(4096))
        assert wait_for(lambda: last_steps(registry.view(str(run), "job", SOURCE_RANK_FILES, members))[:4]
                        == [100] * 4)
        assert calls, "the listener was told of the new state"
        passes = registry.passes
        assert wait_for(lambda: registry.passes > passes + 2) and registry._thread.is_alive()
        data = registry.get(str(run), "job", SOURCE_RANK_FILES, members)
        problems = {r.rank: r.problems() for r in data.ranks}
        assert any("refused" in p for p in problems[4]), problems
        assert any("left out" in p for p in problems[5]), problems
        assert any("not a regular file" in p for p in problems[7]), problems
        # and the health rules judge the good ranks
        with clusters.judging(str(run), registry.view(str(run), "job", SOURCE_RANK_FILES, members)):
            found = engine.check_run(RunSeries(run="job", state=RunState(now=0.0, directory=str(run))))
        assert not [f for f in found if f.rule == "rank_stopped" and "Rank 0 " in f.message]
    finally:
        registry.stop()


def test_cluster_rules_judged_once_per_state_give_the_findings_judged_afresh(tmp_path):
    run = tmp_path / "job"
    write_cluster(run, ranks=8, slow=(5, 60), stop=(3, 120), diverge=(2, 100), leak=(6, 2.0), with_event_file=False)
    series = RunSeries(run="job", state=RunState(now=0.0, directory=str(run)))
    judged_before = cluster_rules.JUDGED.computed
    kept = [f.to_json() for f in engine.check_run(series)]
    assert cluster_rules.JUDGED.computed > judged_before
    assert {f["rule"] for f in kept} >= {"slow_rank", "rank_stopped", "rank_diverging", "memory_growth"}, kept
    # afresh: each rule's own function on the same state, no findings kept
    with clusters.one_reload():
        fresh = []
        for rule, cfg in engine.enabled_rules():
            if rule.id in cluster_rules.CLUSTER_ONLY:
                fresh += [f.to_json() for f in rule.fn(series, cfg)]
    assert sorted(json.dumps(f, sort_keys=True) for f in kept if f["rule"] in cluster_rules.CLUSTER_ONLY) == \
        sorted(json.dumps(f, sort_keys=True) for f in fresh)
    # findings handed out are copies: a level set by one configuration does not reach another check
    louder = engine.check_run(series, {"slow_rank": {"level": "error"}})
    assert [f.level for f in louder if f.rule == "slow_rank"] == ["error"]
    again = computed = cluster_rules.JUDGED.computed
    assert [f.to_json() for f in engine.check_run(series)] == kept
    assert cluster_rules.JUDGED.computed == computed, "judged again though the state did not change"
    # other thresholds are judged on their own
    engine.check_run(series, {"slow_rank": {"threshold": 0.5}})
    assert cluster_rules.JUDGED.computed == again + 1


@pytest.mark.slow
def test_health_panel_after_an_append_gives_what_check_gives(tmp_path):
    """A real tensorboard (reload every second): the Health panel asked after a reload that appended rows to every
    rank file judges them, with the findings `tb-mindspore check` gives on the same files (read whole, rules run
    afresh in its own process)."""
    from tb_harness import App

    logs = tmp_path / "logs"
    run = logs / "job"
    steps = np.arange(2, 602, 2)
    append = write_split(run, 8, steps, cut=401, slow=(5, 60), stop=(3, 300), leak=(6, 2.0))
    data = cluster_columns(8, steps, slow=(5, 60), stop=(3, 300), leak=(6, 2.0))
    from tb_plugin_mindspore.writing.writer import SummaryWriter

    with SummaryWriter(str(run), flush_secs=0.5) as wr:
        wr.run_info({"logdir": os.path.abspath(str(run)), "rank": 0, "rank_size": 8}, step=0)
        s, w, cols = data[0]
        for step, wall, loss in zip(s.tolist(), w.tolist(), cols["loss"].tolist()):
            wr.scalar(metadata.LOSS, loss, step, wall_time=wall)
    app = App(logs)
    try:
        app.wait_for_runs(["job"])
        app.wait_for_last_step("job", metadata.LOSS, 600)

        def cluster_findings(answer):
            (r,) = [r for r in answer["runs"] if r["run"] == "job"]
            return sorted(json.dumps(f, sort_keys=True) for f in r["findings"] if f["rule"] in
                          cluster_rules.CLUSTER_ONLY)

        before = cluster_findings(app.plugin("/health", run="job"))
        assert any('"rank_stopped"' in f and "went on to step 400" in f for f in before), before
        append()
        assert wait_for(lambda: any("went on to step 600" in f for f in
                                    cluster_findings(app.plugin("/health", run="job"))), timeout=30)
        time.sleep(1.1)      # past the answer's memo
        panel = cluster_findings(app.plugin("/health", run="job"))
    finally:
        app.close()
    proc = warm.run([sys.executable, "-m", "tb_plugin_mindspore.cli", "check", str(logs), "--format", "json"],
                    capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    assert panel == cluster_findings(json.loads(proc.stdout)), (panel, proc.stdout[:2000])
    assert {json.loads(f)["rule"] for f in panel} >= {"slow_rank", "rank_stopped", "memory_growth"}, panel
