"""The Cluster section in headless Chromium against a real ``tensorboard``: ranks grouped by node, a stopped rank
marked, the metric switch, hover naming rank / node / step / value, a click adding that rank's curve."""

import pytest

from browser_helpers import open_tab
from cluster_data import write_cluster
from tb_harness import tensorboard_process

PANEL = "[data-testid=cluster-panel]"

pytestmark = pytest.mark.slow     # a tensorboard process and a browser


@pytest.fixture(scope="module")
def cluster_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("cluster_ui") / "logs"
    root.mkdir()
    write_cluster(root / "job", ranks=16, nodes=4, stop=(9, 120), slow=(3, 40))
    with tensorboard_process(root) as base:
        yield base


def test_cluster_heatmap_groups_ranks_by_node_and_marks_the_stopped_rank(cluster_server, page):
    frame = open_tab(page, cluster_server)
    frame.wait_for_selector(PANEL + "[data-state=ready]", timeout=60000).scroll_into_view_if_needed()
    info = frame.eval_on_selector(PANEL, "(p) => ({...p.dataset})")
    assert info["ranks"] == "16" and info["cols"] == "100" and info["stopped"] == "9"
    nodes = frame.eval_on_selector_all("[data-testid=cluster-node]", "(ns) => ns.map((n) => n.textContent)")
    assert nodes == ["node node0", "node node1", "node node2", "node node3"]
    marked = frame.eval_on_selector_all("[data-testid=cluster-rank] .ms-cluster-mark",
                                        "(ms) => ms.map((m) => m.parentElement.dataset.rank)")
    assert marked == ["9"]
    assert "Stopped writing before step 200: rank 9." in frame.inner_text("[data-testid=cluster-notes]")

    # hover the first rank row (row 1: row 0 is node0's label row), last column
    canvas = frame.query_selector(PANEL + " canvas")
    box = canvas.bounding_box()
    row_h = box["height"] / 20              # 16 ranks + 4 node rows
    page.mouse.move(box["x"] + box["width"] - 2, box["y"] + 1.5 * row_h)
    frame.wait_for_selector("[data-testid=cluster-tooltip]:not([hidden])", timeout=10000)
    text = frame.inner_text("[data-testid=cluster-tooltip]")
    assert "rank 0 · node node0" in text and "step 200" in text and "ms" in text

    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + 4.5 * row_h)      # rank 3
    frame.wait_for_selector("[data-testid=cluster-chart][data-ranks='3']", timeout=20000)

    frame.select_option("[data-testid=cluster-metric]", "data_wait_ms")
    frame.wait_for_function("() => document.querySelector('[data-testid=cluster-legend]').textContent"
                            ".startsWith('Data wait')", timeout=20000)
    assert not page.console_errors, page.console_errors


def test_a_refused_rank_file_is_shown_as_refused(tmp_path, page):
    """A rank file this version cannot read is marked "refused" with its reason (hover), not drawn as a rank that
    never wrote; status names it."""
    import json
    import urllib.request

    import numpy as np

    from cluster_data import write_rank_file
    from tb_plugin_mindspore.contract import rank_file

    root = tmp_path / "logs"
    for rank in (0, 1):
        write_rank_file(str(root / "job" / "cluster" / ("rank%d.tbmsrank" % rank)), rank, np.arange(1, 21),
                        1.7e9 + np.arange(1, 21), {"step_time_ms": np.full(20, 100.0 + rank)}, rank_size=3)
    (root / "job" / "cluster" / "rank2.tbmsrank").write_bytes(rank_file.MAGIC + (2 ** 32 - 1).to_bytes(4, "little"))
    with tensorboard_process(root) as base:
        frame = open_tab(page, base)
        frame.wait_for_selector(PANEL + "[data-state=ready]", timeout=60000).scroll_into_view_if_needed()
        mark = frame.wait_for_selector("[data-testid=cluster-rank][data-rank='2'] [data-testid=cluster-refused]")
        assert mark.text_content() == "refused" and "larger than" in mark.get_attribute("title")
        with urllib.request.urlopen(base + "/data/plugin/mindspore/status", timeout=30) as r:
            warnings = json.loads(r.read())["warnings"]
        assert any(w["file"] == "job/cluster/rank2.tbmsrank" and "refused" in w["reason"] for w in warnings)
    assert not page.console_errors, page.console_errors
