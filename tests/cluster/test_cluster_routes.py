"""The ``clusters`` and ``cluster`` routes through TensorBoard's own WSGI app (our plugin through its entry point):
the listing, the ranks x steps matrix (decoded, within bfloat16 of what was written), rows ordered by node, a
stopped rank's last step, one rank at full precision, mindformers' rank_<k> folders, and errors as one-line JSON."""

import numpy as np
import pytest

from tb_plugin_mindspore.answers import encode

from cluster_data import write_cluster, write_rank_folders
from tb_harness import App

BF16_REL = 2 ** -8


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    root = tmp_path_factory.mktemp("clusters")
    written = write_cluster(root / "job", ranks=6, nodes=2, stop=(4, 150), slow=(1, 60))
    folders = write_rank_folders(root / "mf" / "tensorboard", ranks=3)
    a = App(root)
    yield a, written, folders
    a.close()


def test_listing_names_both_kinds_of_cluster(app):
    a, _, _ = app
    got = {c["run"]: c for c in a.plugin("/clusters")["clusters"]}
    assert got["job"]["source"] == "rank_files" and got["job"]["ranks"] == 6 and got["job"]["nodes"] == 2
    assert got["job"]["metrics"] == ["step_time_ms", "data_wait_ms", "grad_norm", "loss", "host_memory_mb"]
    assert got["job"]["last_step"] == 200
    assert got["mf/tensorboard"]["source"] == "rank_folders" and got["mf/tensorboard"]["ranks"] == 3
    assert got["mf/tensorboard"]["metrics"] == ["grad_norm", "loss"]


def test_matrix_is_what_the_ranks_wrote(app):
    a, written, _ = app
    body = a.plugin("/cluster", run="job", metric="step_time_ms", max_steps=5000)
    assert body["shape"] == [6, 100] and body["encoding"] == "bf16-planes" and body["unit"] == "ms"
    assert [r["node"] for r in body["ranks"]] == ["node0"] * 3 + ["node1"] * 3
    assert body["nodes"] == [{"node": "node0", "rows": [0, 1, 2]}, {"node": "node1", "rows": [3, 4, 5]}]
    assert body["ranks"][4]["last_step"] == 150 and body["ranks"][0]["last_step"] == 200
    values, missing = encode.decode_bf16_planes_b64(body["values"], tuple(body["shape"]))
    for row, r in enumerate(body["ranks"]):
        steps, _, cols = written[r["rank"]]
        idx = np.searchsorted(np.array(body["steps"]), steps)
        np.testing.assert_allclose(values[row, idx], cols["step_time_ms"], rtol=BF16_REL)
    assert missing[4, 75:].all() and not missing[4, :75].any()      # rank 4's row ends at step 150


def test_downsampled_columns_and_one_rank_at_full_precision(app):
    a, written, _ = app
    body = a.plugin("/cluster", run="job", metric="loss", max_steps=10)
    assert body["shape"] == [6, 10] and body["downsampled"] and body["total_steps"] == 100
    one = a.plugin("/cluster", run="job", metric="loss", rank=1)
    steps, _, cols = written[1]
    assert [p[0] for p in one["points"]] == steps.tolist() and one["node"] == "node0"
    np.testing.assert_allclose([p[2] for p in one["points"]], cols["loss"].astype(np.float32), rtol=1e-7)


def test_rank_folders_matrix(app):
    a, _, folders = app
    body = a.plugin("/cluster", run="mf/tensorboard", metric="grad_norm")
    assert body["source"] == "rank_folders" and [r["rank"] for r in body["ranks"]] == [0, 1, 2]
    values, _ = encode.decode_bf16_planes_b64(body["values"], tuple(body["shape"]))
    np.testing.assert_allclose(values[2], folders[2][2]["grad_norm"], rtol=BF16_REL)


@pytest.mark.parametrize("query, code, text", [
    (dict(run="nope", metric="loss"), 404, "no cluster named 'nope'"),
    (dict(run="job", metric="bogus"), 400, "metric must be one of"),
    (dict(run="job"), 400, "missing query parameter 'metric'"),
    (dict(run="job", metric="loss", rank="7"), 404, "cluster 'job' has no rank 7"),
    (dict(run="job", metric="loss", max_steps="0"), 400, "'max_steps' must be in"),
])
def test_errors_are_one_line_json(app, query, code, text):
    a, _, _ = app
    body = a.plugin("/cluster", expect=code, **query)
    assert text in body["error"]["message"] and "\n" not in body["error"]["message"]
