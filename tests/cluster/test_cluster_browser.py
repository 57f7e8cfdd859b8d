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
