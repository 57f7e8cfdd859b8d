"""A real ``tensorboard`` process on a logdir recorded by real MindSpore training: the tab, its JS and its data."""

import time
import urllib.request

import pytest

from tb_harness import fetch_json, tensorboard_process


@pytest.mark.parametrize("prefix", ["", "/tb"])
@pytest.mark.slow
def test_tensorboard_process_serves_the_tab(recorded_logdir, prefix):
    with tensorboard_process(recorded_logdir, path_prefix=prefix) as base:
        listing = fetch_json(base + "/data/plugins_listing")
        assert listing["mindspore"]["tab_name"] == "MindSpore"
        with urllib.request.urlopen(base + "/data/plugin/mindspore/index.js") as r:
            assert r.status == 200 and b"render" in r.read()
        deadline = time.time() + 60
        while True:  # the loader reads in the background
            runs = fetch_json(base + "/data/plugin/mindspore/runs")["runs"]
            body = fetch_json(base + "/data/plugin/mindspore/scalars?run=run_a&tag=core/grad_norm", expect=None)
            if (runs == ["run_a", "run_b"] and "points" in body and body["points"][-1][0] == 32) or time.time() > deadline:
                break
            time.sleep(0.3)
        assert runs == ["run_a", "run_b"]
        assert [p[0] for p in body["points"]] == [5, 10, 15, 20, 25, 30, 32]
        assert all(p[2] > 0 for p in body["points"])
        err = fetch_json(base + "/data/plugin/mindspore/scalars?run=run_a&tag=nope", expect=404)
        assert err["error"]["code"] == 404
