"""mindformers' ``rank_<k>`` folders as one cluster, with what its callbacks write per rank: ``iteration-time`` is
the step time (so ``slow_rank`` runs on them), ``device_local_norm`` and ``local_lm_loss`` are the per-rank local
gradient norm and loss of the Cluster section; written by tensorboardX as mindformers writes them."""

import json

import pytest

from tb_harness import App
from tb_plugin_mindspore import cli

RANKS, STEPS = 4, 60


@pytest.fixture
def mf_ranks(tmp_path):
    from tensorboardX import SummaryWriter

    pytest.importorskip("tensorboardX")
    root = tmp_path / "output" / "tensorboard"
    for r in range(RANKS):
        with SummaryWriter(str(root / ("rank_%d" % r))) as w:
            for s in range(1, STEPS + 1):
                slow = r == 3 and s > 10
                w.add_scalar("loss", 2.0 - 0.01 * s, s)
                w.add_scalar("iteration-time", 130 if slow else 100 + (s % 3), s)    # ms, as MFLossMonitor
                w.add_scalar("device_local_norm", 1.0 + 0.1 * r, s)
                w.add_scalar("local_lm_loss", 2.0 - 0.01 * s + 0.05 * r, s)
    return tmp_path


def test_iteration_time_is_step_time_for_the_cluster_rules(mf_ranks, capsys):
    code = cli.main(["check", str(mf_ranks), "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code in (0, 1)
    found = {r["run"]: [f for f in r["findings"] if f["rule"] == "slow_rank"] for r in out["runs"]}
    (slow,) = found["output/tensorboard/rank_0"]
    assert slow["message"].startswith("Rank 3")


def test_per_rank_local_values_in_the_cluster_section(mf_ranks):
    app = App(mf_ranks)
    try:
        app.wait_for_runs(["output/tensorboard/rank_0"])
        (cluster,) = app.plugin("/clusters")["clusters"]
        assert cluster["ranks"] == RANKS
        assert {"step_time_ms", "local_grad_norm", "local_loss"} <= set(cluster["metrics"])
        norm = app.plugin("/cluster", run=cluster["run"], metric="local_grad_norm", rank=2)
        assert {round(p[2], 4) for p in norm["points"]} == {1.2}
        entry = {e["tag"]: e for tier in app.plugin("/tags", run="output/tensorboard/rank_0")["runs"][
            "output/tensorboard/rank_0"].values() for e in tier}
        assert entry["device_local_norm"]["per_rank"] and entry["local_lm_loss"]["per_rank"]
    finally:
        app.close()
