"""Debug tier: histograms of the outputs of the network's top-level blocks (``debug/activation/<cell>``) on a few
samples of the step's batch, by one extra forward pass (see ``tb_mindspore_callbacks.cells.activations``)."""

import numpy as np

from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.contract import debug_items

from ..common.util import cb_get, find_cell
from ..cells.activations import ActivationProbe, TorchActivationProbe, torch_blocks
from .base import Recorder

__all__ = ["ActivationRecorder", "clean_cell_name", "default_blocks"]


def clean_cell_name(name):
    """Cell names as the user wrote them: the wrappers' attribute names (``_backbone.``) removed."""
    parts = [p for p in name.split(".") if p not in ("_backbone", "network")]
    return ".".join(parts) if parts else name


def default_blocks(probe_net):
    """Top-level blocks: children of the backbone; containers (CellList / SequentialCell) expanded one level."""
    from mindspore import nn

    root = probe_net
    while isinstance(root, nn.WithLossCell) or (hasattr(root, "_backbone") and isinstance(root._backbone, nn.Cell)):
        root = root._backbone
    prefix = {id(c): n for n, c in probe_net.cells_and_names()}
    out = []
    for name, child in root.name_cells().items():
        if isinstance(child, (nn.CellList, nn.SequentialCell)):
            for sub_name, sub in child.name_cells().items():
                out.append((clean_cell_name(prefix.get(id(sub), name + "." + sub_name)), sub))
        else:
            out.append((clean_cell_name(prefix.get(id(child), name)), child))
    # Activation-free cells (ReLU, Dropout) would only repeat their neighbour: keep cells with parameters.
    return [(n, c) for n, c in out if list(c.get_parameters())] or out


class ActivationRecorder(Recorder):
    item = debug_items.ACTIVATIONS
    name = item.name

    def on_start(self, ctx):
        from mindspore import nn

        self.ctx = ctx
        self.probe = None
        s = ctx.settings
        probe_net = ctx.probe_net
        if probe_net is None:
            train_cell = find_cell(cb_get(ctx.cb_params, "train_network"), nn.TrainOneStepCell)
            probe_net = train_cell.network if train_cell is not None else None
        if probe_net is None:
            ctx.not_recorded("activations", "no network to probe: give network= (the forward network)")
            return
        if not isinstance(probe_net, nn.Cell):
            self._start_torch(ctx, probe_net)
            return
        if s.activations_include is not None:
            chosen = [(clean_cell_name(name), cell) for name, cell in probe_net.cells_and_names()
                      if name and s.activations_include.search(clean_cell_name(name))]
        else:
            chosen = default_blocks(probe_net)
        if len(chosen) > s.layers.max_layers:
            keep = np.unique(np.round(np.linspace(0, len(chosen) - 1, s.layers.max_layers)).astype(int))
            chosen = [chosen[i] for i in keep]
        self.probe = ActivationProbe(probe_net, chosen, s.activation_samples)
        ctx.info["activation_cells"] = [name for name, _ in self.probe.cells]

    def _start_torch(self, ctx, module):
        """A torch-style module (``named_parameters()`` names): forward hooks on its top-level blocks."""
        s = ctx.settings
        if s.activations_include is not None:
            chosen = [(name, m) for name, m in module.named_modules()
                      if name and s.activations_include.search(name)]
        else:
            chosen = torch_blocks(module)
        if len(chosen) > s.layers.max_layers:
            keep = np.unique(np.round(np.linspace(0, len(chosen) - 1, s.layers.max_layers)).astype(int))
            chosen = [chosen[i] for i in keep]
        self.probe = TorchActivationProbe(module, chosen, s.activation_samples)
        ctx.info["activation_cells"] = [name for name, _ in chosen]

    def on_point(self, r):
        if "debug" not in r.due or self.ctx.writer is None or self.probe is None:
            return
        inputs = r.inputs
        if inputs is None:
            inputs = cb_get(self.ctx.cb_params, "train_dataset_element")
        for name, array in self.probe(inputs).items():
            self.ctx.writer.histogram(metadata.ACTIVATION_PREFIX + name, array, r.step)
