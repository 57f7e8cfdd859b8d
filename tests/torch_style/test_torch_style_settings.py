"""The torch-style side without PyTorch: importing it never imports MindSpore (or PyTorch), and misuse is refused
at construction with a one-line message."""

import subprocess
import sys

import pytest

from tb_mindspore_callbacks.torch_style import ModuleParams, TorchMonitor


def test_package_imports_without_mindspore():
    code = ("import sys, tb_mindspore_callbacks\n"
            "from tb_mindspore_callbacks.torch_style import TorchMonitor, ModuleParams, Recording\n"
            "from tb_mindspore_callbacks import make_run_dir\n"
            "assert 'mindspore' not in sys.modules and 'torch' not in sys.modules, sorted(sys.modules)\n"
            "print(' '.join(sorted(tb_mindspore_callbacks.__all__)))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    # The MindSpore exports are still there, imported on first use.
    assert {"LoopMonitor", "TrainMonitor", "MonitoredTrainCell", "LandscapeCallback", "Debug", "TorchMonitor"} <= \
        set(proc.stdout.split())


@pytest.mark.parametrize("kwargs, message", [
    ({"model": {"w": 1}}, "model must have named_parameters() (a torch.nn.Module or a torch-style module), got dict"),
    ({"debug": ["activations"]}, "unknown debug item(s) 'activations' for a torch-style model"),
    ({"collect_freq": 0}, "collect_freq must be an int >= 1, got 0"),
    ({"layers_include": "("}, "layers_include is not a valid regular expression"),
    ({"optimizer": object()}, "optimizer must have torch-style param_groups"),
    ({"lr": "high"}, "lr must be a number, a sequence of numbers (one per group) or a callable"),
])
def test_misuse_is_refused_at_construction(tmp_path, kwargs, message):
    with pytest.raises(ValueError) as e:
        TorchMonitor(str(tmp_path / "run"), **kwargs)
    assert message in str(e.value) and "\n" not in str(e.value)
    assert not (tmp_path / "run").exists()


def test_explicit_names_and_learning_rates():
    p = ModuleParams(params=[[1.0, 2.0], [3.0]], param_names=["a.weight", "a.bias"], lr=lambda: [0.1, 0.2])
    assert p.names == ["a.weight", "a.bias"] and p.lrs() == (0.1, 0.2)
    assert p.lr_config()["kind"] == "dynamic"
    with pytest.raises(ValueError, match="param_names has 1 names for 2 parameters"):
        ModuleParams(params=[[1.0], [2.0]], param_names=["a"])
