"""A real ``tensorboard`` process on a logdir recorded by real MindSpore training: the tab, its JS and its data."""

import urllib.request

import pytest

from tb_harness import fetch_json, tensorboard_process


@pytest.mark.parametrize("prefix", ["", "/tb"])
def test_tensorboard_process_serves_the_tab(recorded_logdir, prefix):
    with tensorboard_process(recorded_logdir, path_prefix=prefix) as base:
        listing = fetch_json(base + "/data/plugins_listing")
        assert listing["mindspore"]["tab_name"] == "MindSpore"
        with urllib.request.urlopen(base + "/data/plugin/mindspore/index.js") as r:
            assert r.status == 200 and b"render" in r.read()
        runs = fetch_json(base + "/data/plugin/mindspore/runs")["runs"]
        assert runs == ["run_a", "run_b"]
        body = fetch_json(base + "/data/plugin/mindspore/scalars?run=run_a&tag=core/grad_norm")
        assert [p[0] for p in body["points"]] == [5, 10, 15, 20, 25, 30, 32]
        assert all(p[2] > 0 for p in body["points"])
        err = fetch_json(base + "/data/plugin/mindspore/scalars?run=run_a&tag=nope", expect=404)
        assert err["error"]["code"] == 404
