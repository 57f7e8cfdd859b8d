"""Precursors said as "watch" (level info, never error): attention logits growing, Adam's epsilon dominating the
update, sharpness at the edge of stability."""

import numpy as np

from tb_plugin_mindspore import metadata

from health_helpers import findings, make_run


def test_attention_logit_reaching_qk_clip_limit_is_a_watch():
    logits = np.concatenate([np.full(10, 8.0), np.linspace(8.0, 150.0, 20)])
    (f,) = findings(make_run({metadata.ATTENTION_MAX_LOGIT: logits}), "attention_logit_growth")
    assert f.level == "info" and f.watch and f.message.startswith("Watch:")
    assert f.to_json()["watch"] is True and "QK" in f.message
    first = int(np.nonzero(logits >= 80.0)[0][0]) + 1        # tenfold the early 8, above 30: the earlier signal
    assert f.steps[0] == first


def test_mindformers_max_attention_logit_tag_is_read():
    logits = np.concatenate([np.full(10, 5.0), np.full(10, 120.0)])
    (f,) = findings(make_run({"max_attention_logit": logits}), "attention_logit_growth")
    assert f.tag == "max_attention_logit" and f.steps[0] == 11


def test_steady_attention_logits_are_quiet():
    logits = 6.0 + 0.5 * np.random.default_rng(0).normal(size=40)
    assert findings(make_run({metadata.ATTENTION_MAX_LOGIT: logits}), "attention_logit_growth") == []


def _adam_run(grad_norms, eps, optimizer="AdamWeightDecay"):
    names = ["embed.weight", "head.weight"]
    sizes = {"embed.weight": 10_000, "head.weight": 100}
    steps = np.arange(10, 10 * len(grad_norms) + 1, 10)
    return make_run({metadata.LOSS: (steps, np.linspace(2, 1, len(grad_norms)))},
                    layers={metadata.GRAD_NORM_LAYERS: (names, (steps, np.asarray(grad_norms)))},
                    info={"optimizer": optimizer, "optimizer_eps": eps, "layer_sizes": sizes})


def test_adam_epsilon_dominating_a_layer_is_a_watch():
    # embed: ||g|| 1e-5 over 10,000 elements -> RMS 1e-7, below AdamWeightDecay's default 1e-6; head: RMS 1e-2.
    run = _adam_run([[1e-5, 0.1]] * 12, 1e-6)
    (f,) = findings(run, "adam_epsilon_dominated")
    assert f.level == "info" and f.watch and f.layers == ("embed.weight",)
    assert "1e-07" in f.message and "epsilon 1e-06" in f.message


def test_adam_epsilon_below_every_gradient_rms_is_quiet():
    assert findings(_adam_run([[1e-5, 0.1]] * 12, 1e-8), "adam_epsilon_dominated") == []
    assert findings(_adam_run([[1e-5, 0.1]] * 12, 1e-6, optimizer="Momentum"), "adam_epsilon_dominated") == []


def test_sharpness_above_the_line_is_a_watch_not_a_warning():
    ratio = np.concatenate([np.full(5, 0.5), np.full(5, 1.4)])
    (f,) = findings(make_run({metadata.SHARPNESS_RATIO: ratio}), "sharpness_above_stability")
    assert f.level == "info" and f.watch and f.message.startswith("Watch:") and f.steps[0] == 6
