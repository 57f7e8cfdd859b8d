"""Trains with mindformers' own training cell, Trainer and YAML registry (run in the mindformers environment by
test_mindformers.py): ``python mindformers_child.py OUT SCENARIO...``.

Scenarios (in one process, so that mindformers is imported once):

* ``import``: importing tb_mindspore_callbacks does not import mindformers (must come first);
* ``cell_graph`` / ``cell_pynative_plain``: ``Model(MFTrainOneStepCell(...)).train`` with TrainMonitor; the first
  with ``use_clip_grad`` and ``local_norm`` and a gradient spike at step 16 (live health and the flight recorder),
  the second with neither (what cannot be recorded is said);
* ``trainer``: mindformers' ``Trainer(args=TrainingArguments(...), callbacks=[TrainMonitor(...)])``;
* ``yaml``: mindformers' own shipped general-task YAML with a ``callbacks:`` entry ``type: TrainMonitor`` and a
  ``tensorboard:`` folder of mindformers' own (``OUT/yaml/mf_tensorboard``, where it writes its configuration).

Every scenario writes ``OUT/<scenario>/run`` (our run) and ``OUT/<scenario>/outputs.json``: mindformers' cell
outputs of every step, read by a reference callback, to compare with what TrainMonitor recorded.
"""

import json
import os
import sys

import numpy as np

OUT = sys.argv[1]
SCENARIOS = sys.argv[2:]
SPIKE_STEP = 16


def scenario_import():
    import tb_mindspore_callbacks  # noqa: F401
    from tb_mindspore_callbacks import mindformers_registry

    assert "mindformers" not in sys.modules, "importing tb_mindspore_callbacks imported mindformers"
    assert mindformers_registry._HOOK, "no import hook although mindformers is installed"
    return {"mindformers_imported": False}


def _classes():
    import mindspore as ms
    from mindspore import nn
    from mindspore.train import Callback
    from mindformers.models.configuration_utils import PretrainedConfig
    from mindformers.models.modeling_utils import PreTrainedModel

    class TinyConfig(PretrainedConfig):
        model_type = "tbms_tiny_regressor"

    class TinyRegressor(PreTrainedModel):
        """Two dense layers and a squared error: mindformers' Trainer takes PreTrainedModel instances."""
        config_class = TinyConfig
        base_model_prefix = "tiny"

        def __init__(self, config=None):
            super().__init__(config or TinyConfig())
            self.hidden = nn.Dense(8, 16)
            self.out = nn.Dense(16, 1)

        def construct(self, x, y):
            return ((self.out(ms.ops.relu(self.hidden(x))) - y) ** 2).mean()

    class CpuOverflowCheck(Callback):
        """mindformers' cell checks overflow with Ascend kernels (NPUGetFloatStatusV2) or GPU ones (FloatStatus)
        that have no CPU kernel; its IsFinite path (Ascend's INFNAN mode without AllFinite) runs on CPU. Set before
        the first step compiles the cell."""

        def on_train_begin(self, run_context):
            use_isfinite_overflow_check(run_context.original_args().train_network)

    class OutputsLog(Callback):
        """The reference: mindformers' cell outputs of every step, read on the host."""

        def __init__(self):
            self.steps = []

        def on_train_step_end(self, run_context):
            cb = run_context.original_args()
            out = cb.net_outputs
            row = {"step": int(cb.cur_step_num), "loss": float(np.asarray(out[0].asnumpy()).mean()),
                   "overflow": bool(np.asarray(out[1].asnumpy()).reshape(-1)[0]),
                   "loss_scale": float(np.asarray(out[2].asnumpy()).reshape(-1)[0]),
                   "lr": float(np.asarray(out[3].asnumpy()).reshape(-1)[0])}
            if out[4] is not None:
                row["global_norm"] = float(np.asarray(out[4].asnumpy()).reshape(-1)[0])
            if len(out) >= 7:
                row["local_norm"] = [float(v) for v in np.asarray(out[5].asnumpy()).reshape(-1)]
            self.steps.append(row)

    return TinyRegressor, CpuOverflowCheck, OutputsLog


def use_isfinite_overflow_check(network):
    for _, cell in network.cells_and_names():
        if hasattr(cell, "enable_allfinite"):
            cell.ascend_910b_target = True
            cell._ascend_check_overflow_mode = "INFNAN_MODE"
            cell.enable_allfinite = False


def _data(spike=False, n=96):
    import mindspore.dataset as ds

    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, 8)).astype(np.float32)
    y = rng.standard_normal((n, 1)).astype(np.float32)
    if spike:
        x[(SPIKE_STEP - 1) * 4:SPIKE_STEP * 4] *= 1e4      # the batch of step SPIKE_STEP
    return ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(4)


def _dump(name, log, extra=None):
    d = os.path.join(OUT, name)
    with open(os.path.join(d, "outputs.json"), "w") as f:
        json.dump({"steps": log.steps, **(extra or {})}, f)


def scenario_cell(name, mode, clip, local, spike):
    import mindspore as ms
    from mindspore import nn
    from mindformers.wrapper import MFTrainOneStepCell
    from tb_mindspore_callbacks import Debug, Storage, TrainMonitor

    ms.set_context(mode=mode)
    ms.set_seed(0)
    TinyRegressor, _, OutputsLog = _classes()
    net = TinyRegressor()
    opt = nn.AdamWeightDecay(net.trainable_params(), 1e-3)
    cell = MFTrainOneStepCell(net, opt, use_clip_grad=clip, max_grad_norm=1.0, local_norm=local)
    use_isfinite_overflow_check(cell)
    log = OutputsLog()
    mon = TrainMonitor(os.path.join(OUT, name, "run"), collect_freq=2, debug=Debug(items="all", every=4),
                       storage=Storage(registry=None))
    ms.Model(cell).train(1, _data(spike), callbacks=[log, mon], dataset_sink_mode=False)
    _dump(name, log, {"errors": mon.errors, "events": mon.health_events,
                      "names": [p.name for p in opt.parameters]})


def scenario_trainer():
    from mindformers import Trainer, TrainingArguments
    from tb_mindspore_callbacks import Storage, TrainMonitor

    TinyRegressor, CpuOverflowCheck, OutputsLog = _classes()
    log = OutputsLog()
    out = os.path.join(OUT, "trainer")
    args = TrainingArguments(output_dir=os.path.join(out, "mf_output"), num_train_epochs=1,
                             per_device_train_batch_size=4, learning_rate=1e-3, use_clip_grad=True, max_grad_norm=1.0,
                             save_steps=10000, save_strategy="no", logging_steps=4, sink_mode=False)
    mon = TrainMonitor(os.path.join(out, "run"), collect_freq=2, storage=Storage(registry=None))
    Trainer(task="general", model=TinyRegressor(), args=args, train_dataset=_data(),
            callbacks=[CpuOverflowCheck(), log, mon]).train()
    _dump("trainer", log, {"errors": mon.errors})


def scenario_yaml():
    import yaml
    import mindformers
    from mindformers import Trainer

    TinyRegressor, CpuOverflowCheck, OutputsLog = _classes()
    out = os.path.join(OUT, "yaml")
    os.makedirs(out, exist_ok=True)
    shipped = os.path.join(os.path.dirname(os.path.dirname(mindformers.__file__)), "configs", "general",
                           "run_general_task.yaml")
    with open(shipped) as f:
        cfg = yaml.safe_load(f)
    cfg["output_dir"] = os.path.join(out, "mf_output")
    cfg["context"]["device_target"] = "CPU"
    cfg["runner_config"].update(epochs=1, batch_size=4, sink_mode=False)
    cfg["runner_wrapper"]["local_norm"] = True
    cfg["train_dataset"] = {"data_loader": {"type": None}, "batch_size": 4}
    # mindformers' own TensorBoard folder: its Trainer writes the configuration there as text summaries.
    cfg["tensorboard"] = {"tensorboard_dir": os.path.join(out, "mf_tensorboard")}
    cfg["callbacks"] = [{"type": "MFLossMonitor"},
                        {"type": "TrainMonitor", "logdir": os.path.join(out, "run"), "collect_freq": 2,
                         "debug": ["layer_grad_norm"], "debug_freq": 4, "registry": None}]
    path = os.path.join(out, "config.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(cfg, f)
    log = OutputsLog()
    Trainer(args=path, model=TinyRegressor(), train_dataset=_data(), callbacks=[CpuOverflowCheck(), log]).train()
    _dump("yaml", log)


def main():
    os.makedirs(OUT, exist_ok=True)
    import mindspore as ms

    ms.set_context(device_target="CPU")
    for s in SCENARIOS:
        if s == "import":
            scenario_import()
        elif s == "cell_graph":
            scenario_cell(s, ms.GRAPH_MODE, clip=True, local=True, spike=True)
        elif s == "cell_pynative_plain":
            scenario_cell(s, ms.PYNATIVE_MODE, clip=False, local=False, spike=False)
        elif s == "trainer":
            scenario_trainer()
        elif s == "yaml":
            scenario_yaml()
        else:
            raise SystemExit("unknown scenario %s" % s)
        print("done", s, flush=True)


if __name__ == "__main__":
    main()
