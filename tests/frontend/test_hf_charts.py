"""A Hugging Face Trainer run (transformers' own TensorBoard callback) beside one of ours, in headless Chromium on a
real ``tensorboard``: one loss chart and one learning-rate chart for both, the Trainer's bookkeeping out of Core,
its hand-logged ``grad_norm/<name>`` as one heatmap, its TrainingArguments and model configuration as the run's
hyperparameters. Screenshot in test-artifacts/."""

import os
import shutil

import pytest

from browser_helpers import ARTIFACTS, open_tab, wait_settled
from hf_logs import hf_trainer_logs  # noqa: F401  (fixture)
from tb_harness import tensorboard_process

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def mixed_logdir(hf_trainer_logs, tmp_path_factory):  # noqa: F811
    from tb_plugin_mindspore.writing.writer import SummaryWriter

    root = tmp_path_factory.mktemp("hf_mixed") / "logs"
    shutil.copytree(hf_trainer_logs / "hf", root / "hf")
    with SummaryWriter(str(root / "ours")) as w:
        for step in range(1, 9):
            w.scalar("core/loss", 0.7 - 0.01 * step, step)
            w.scalar("core/learning_rate", 1e-3, step)
    return root


def cards(frame, tier):
    return frame.eval_on_selector_all(
        "[data-testid=chart-card]",
        "(cs, tier) => cs.filter((c) => c.querySelector('[data-tier=' + tier + ']'))"
        ".map((c) => ({tag: c.dataset.tag, sources: c.dataset.sources || '', runs: c.querySelector("
        "'[data-testid=chart]').dataset.runCount, state: c.querySelector('[data-testid=chart]').dataset.state}))",
        tier)


def test_one_chart_per_quantity_and_no_bookkeeping_in_core(page, mixed_logdir):
    with tensorboard_process(mixed_logdir) as base:
        frame = open_tab(page, base)
        frame.wait_for_selector('[data-testid=chart-card][data-tag="core/loss"] [data-testid=chart][data-state=drawn]',
                                timeout=60000)
        wait_settled(frame)
        frame.wait_for_function(
            "() => document.querySelector('[data-testid=chart-card][data-tag=\"core/loss\"] [data-testid=chart]')"
            ".dataset.runCount === '2'", timeout=30000)
        core = {c["tag"]: c for c in cards(frame, "core")}
        assert sorted(core) == ["core/grad_norm", "core/learning_rate", "core/loss"]
        assert set(core["core/loss"]["sources"].split(",")) == {"core/loss", "train/loss"}
        assert core["core/learning_rate"]["runs"] == "2"
        assert core["core/grad_norm"]["sources"] == "train/grad_norm"   # only the Trainer logged it
        subtitle = frame.text_content('[data-testid=chart-card][data-tag="core/loss"] [data-testid=chart-subtitle]')
        assert subtitle == "core/loss · train/loss"
        other = {c["tag"] for c in cards(frame, "other")}
        assert {"train/epoch", "train/total_flos", "train/train_runtime"} <= other
        diagnostic = {c["tag"] for c in cards(frame, "diagnostic")}
        assert "diagnostic/eval_loss" in diagnostic and "eval/loss" not in diagnostic
        panel = '[data-testid=heatmap-panel][data-tag="grad_norm/*"]'
        assert frame.locator(panel).count() == 1
        frame.locator(panel).scroll_into_view_if_needed()
        frame.wait_for_selector(panel + "[data-state=drawn]", timeout=60000)
        rows = frame.eval_on_selector_all(panel + " [data-testid=heatmap-row]",
                                          "(rs) => rs.map((r) => [r.dataset.kind, r.dataset.layer])")
        groups = {layer for kind, layer in rows if kind == "group"}
        assert {"bert.encoder.layer"} & groups or {"bert"} & groups, rows     # module trees of the HF names
        assert frame.locator('[data-testid=chart-card][data-tag^="grad_norm/"]').count() == 0
        page.screenshot(path=os.path.join(ARTIFACTS, "hf-trainer-beside-ours.png"), full_page=True)
        # Run info: the Trainer's arguments and its model's configuration, under the canonical names.
        card = '[data-testid=runinfo-card][data-run="hf"]'
        frame.wait_for_selector("[data-testid=runinfo-section][data-state=ready]", timeout=60000)
        frame.wait_for_selector(card, timeout=30000)
        assert frame.get_attribute(card, "data-sources") == "hf_training_args"
        hparams = frame.eval_on_selector_all(
            card + " [data-testid=runinfo-hparam]",
            "(rs) => Object.fromEntries(rs.map((r) => [r.dataset.name, [JSON.parse(r.dataset.value), "
            "r.querySelector('[data-testid=runinfo-hparam-from]').textContent]]))")
        assert hparams["learning_rate"] == [0.001, "Hugging Face TrainingArguments as args.learning_rate"]
        assert hparams["batch_size"][0] == 4 and hparams["steps"][0] == 8 and hparams["hidden_size"][0] == 32
        assert hparams["num_layers"][0] == 2 and hparams["seed"][0] == 42
        assert "output_dir" not in hparams and "logging_dir" not in hparams
