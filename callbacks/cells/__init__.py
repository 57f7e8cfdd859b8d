"""Code that runs inside MindSpore's compiled graphs or on the device: the monitored training cells
(``train_cell.py``), the flight recorder's ring (``flight_ring.py``), per-layer statistics (``layers.py``:
which parameters are layers, fused norms), the activation probe (``activations.py``) and the rule for when the
activation probe compiles its blocks (``tiering.py``: op by op first).

May import: ``..common``; MindSpore, numpy; ``tb_plugin_mindspore``'s ``contract`` layer.
"""
