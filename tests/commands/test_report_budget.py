"""The report's size budgets: every histogram step while the distribution charts fit, evenly spaced steps beyond
(the first and the last kept, the chart told why), and images the same way."""

import os
import sys

import numpy as np

from tb_plugin_mindspore.commands import report
from tb_plugin_mindspore.writing.writer import SummaryWriter


def test_histogram_steps_per_chart():
    assert report.histogram_steps(10, budget=60000) == 1000          # the tab's own limit
    assert report.histogram_steps(300, budget=60000) == 200
    assert report.histogram_steps(100000, budget=60000) == report.MIN_HISTOGRAM_STEPS
    assert report.histogram_steps(0) == 1000


def _histogram_runs(root, runs=2, tags=3, steps=120):
    rs = np.random.RandomState(0)
    for r in range(runs):
        with SummaryWriter(str(root / ("run%d" % r)), flush_secs=0.5) as w:
            for step in range(1, steps + 1):
                w.scalar("core/loss", 1.0 / step, step)
                for t in range(tags):
                    w.histogram("debug/activation/layer%d" % t, rs.normal(0, 1 + step / 100, 64), step)


def test_every_histogram_step_within_the_budget_and_evenly_spaced_beyond(tmp_path, monkeypatch):
    _histogram_runs(tmp_path / "logs")
    data = report.gather(str(tmp_path / "logs"))
    for run in ("run0", "run1"):
        body = data["histograms"][run]["debug/activation/layer0"]
        assert [r[0] for r in body["rows"]] == list(range(1, 121)) and not body["downsampled"]
        assert "report_budget" not in body
    # 6 charts sharing 360 rows: 60 steps each (MIN_HISTOGRAM_STEPS 50), evenly spaced, first and last kept.
    monkeypatch.setattr(report, "HISTOGRAM_ROWS_BUDGET", 360)
    data = report.gather(str(tmp_path / "logs"))
    body = data["histograms"]["run1"]["debug/activation/layer2"]
    steps = [r[0] for r in body["rows"]]
    assert len(steps) == 60 and steps[0] == 1 and steps[-1] == 120 and body["total_steps"] == 120
    assert body["downsampled"] and body["report_budget"] == 60
    assert data["budgets"]["histogram_steps"] == 60


def test_thin_keeps_the_first_and_the_last():
    assert report._thin(list(range(10)), 4) == [0, 3, 6, 9]
    assert report._thin([1, 2], 5) == [1, 2]
    assert report._thin([1, 2, 3], 1) == [3]


def test_cluster_heatmaps_whole_and_rank_curves_within_their_budget(tmp_path, monkeypatch):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cluster"))
    from cluster_data import write_cluster

    write_cluster(str(tmp_path / "logs" / "job"), ranks=20, steps=np.arange(10, 410, 10), nodes=2)
    data = report.gather(str(tmp_path / "logs"))
    (cluster,) = data["routes"]["clusters"]["clusters"]
    assert cluster["ranks"] == 20
    for metric in cluster["metrics"]:
        assert data["cluster"]["job"][metric]["shape"] == [20, 40]
        assert sorted(data["cluster_ranks"]["job"][metric], key=int) == [str(r) for r in range(report.RANK_CURVES)]
    assert data["budgets"]["rank_curves"] == {"job": report.RANK_CURVES}
    # A smaller budget of points: fewer ranks' curves, never a part of one.
    metrics = len(cluster["metrics"])
    monkeypatch.setattr(report, "RANK_CURVE_POINTS_BUDGET", 3 * 40 * metrics)
    data = report.gather(str(tmp_path / "logs"))
    assert data["budgets"]["rank_curves"] == {"job": 3}
    for metric in cluster["metrics"]:
        assert sorted(data["cluster_ranks"]["job"][metric], key=int) == ["0", "1", "2"]
        assert len(data["cluster_ranks"]["job"][metric]["0"]["points"]) == 40


def test_the_report_asks_what_the_tab_asks():
    from tb_plugin_mindspore.answers import histograms

    assert report.TAB_HISTOGRAM_STEPS == histograms.DEFAULT_MAX_STEPS
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    src = os.path.join(root, "frontend", "src")
    with open(os.path.join(src, "api", "client.js"), encoding="utf-8") as f:
        assert "export const DEFAULT_MAX_POINTS = %d;" % report.TAB_MAX_POINTS in f.read()
    with open(os.path.join(src, "api", "runData.js"), encoding="utf-8") as f:
        assert "export const DEFAULT_MAX_VALUES = %d;" % report.TAB_TENSOR_VALUES in f.read()
    with open(os.path.join(src, "views", "sections", "cluster", "clusterView.js"), encoding="utf-8") as f:
        assert "const MAX_STEPS = %d;" % report.TAB_CLUSTER_STEPS in f.read()


def test_a_mindspore_summary_file_larger_than_one_read_is_reported_whole(tmp_path):
    """The report reads ``*_MS`` files to their end (16 MB a read): a 21 MB file's last steps are in it."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "reliability"))
    import hostile
    from tb_plugin_mindspore.io import ms_proto, records

    run = tmp_path / "logs" / "ms_run"
    run.mkdir(parents=True)
    rs = np.random.RandomState(0)
    with open(str(run / hostile.MS_NAME), "wb") as f:
        f.write(records.frame(ms_proto.Event(wall_time=hostile.T0, version=b"MindSpore.Event:1").SerializeToString()))
        for step in range(1, 22):
            e = hostile.ms_scalar_event(step, 1.0 / step)
            v = e.summary.value.add()
            v.tag = b"input/auto"
            v.image.height, v.image.width = 1, 1
            v.image.encoded_image = rs.bytes(1 << 20)
            f.write(records.frame(e.SerializeToString()))
    assert os.path.getsize(str(run / hostile.MS_NAME)) > 21 << 20
    data = report.gather(str(tmp_path / "logs"))
    (body,) = data["scalars"]["ms_run"].values()
    assert [p[0] for p in body["points"]] == list(range(1, 22))
