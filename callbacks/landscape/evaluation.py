"""The evaluation side of a loss landscape: a fixed evaluation subset and the compiled eval-mode loss.

The subset is taken once into host memory and cut into fixed-size batches; the loss network is compiled once in
GRAPH_MODE in eval mode (``set_train(False)``: no dropout, BatchNorm moving statistics); each grid point writes
precomputed float32 arrays into the parameters in place (``ops.assign``) and runs the compiled graph over the
batches. Parameters, train / eval flags and the execution mode are restored exactly afterwards.
"""

import contextlib

import numpy as np

import mindspore as ms
from mindspore import Tensor, nn, ops

__all__ = ["EvalData", "LossEvaluator", "resolve_loss_network", "check_eval_data", "DEFAULT_BATCHES",
           "DEFAULT_ARRAY_SAMPLES", "DEFAULT_ARRAY_BATCH"]

DEFAULT_BATCHES = 4           # "a few batches" of the evaluation dataset
DEFAULT_ARRAY_SAMPLES = 256   # evaluation subset taken from numpy arrays
DEFAULT_ARRAY_BATCH = 32


def _is_dataset(data):
    return hasattr(data, "create_tuple_iterator") and hasattr(data, "get_batch_size")


class EvalData:
    """A fixed evaluation subset as host (numpy) batches: every grid point sees exactly the same samples.

    Build it with :meth:`take` from a MindSpore dataset (its first ``num_batches`` batches, default 4, or its first
    ``num_samples`` samples), from a tuple of numpy column arrays (first ``num_samples``, default 256), or from a
    list of batches (tuples of arrays). The samples are re-cut into batches of ``batch_size`` (default: the
    dataset's batch size; 32 for arrays); a smaller last batch is evaluated too (one more compilation).
    """

    def __init__(self, columns, batch_size):
        self.columns = [np.ascontiguousarray(c) for c in columns]
        n = {len(c) for c in self.columns}
        if len(n) != 1:
            raise ValueError("evaluation columns have different lengths: %s" % sorted(n))
        self.num_samples = n.pop()
        if self.num_samples == 0:
            raise ValueError("the evaluation subset is empty")
        self.batch_size = int(max(1, min(batch_size, self.num_samples)))

    @property
    def batches(self):
        for lo in range(0, self.num_samples, self.batch_size):
            yield tuple(c[lo:lo + self.batch_size] for c in self.columns)

    @classmethod
    def take(cls, data, num_samples=None, num_batches=None, batch_size=None):
        if isinstance(data, EvalData):
            if num_samples is None and batch_size is None:
                return data
            return cls([c[:num_samples] for c in data.columns], batch_size or data.batch_size)
        if _is_dataset(data):
            if num_samples is None and num_batches is None:
                num_batches = DEFAULT_BATCHES
            got, parts = 0, []
            for i, batch in enumerate(data.create_tuple_iterator(num_epochs=1, output_numpy=True)):
                if num_batches is not None and i >= num_batches:
                    break
                batch = [np.asarray(b) for b in batch]
                if num_samples is not None:
                    batch = [b[:num_samples - got] for b in batch]
                parts.append(batch)
                got += len(batch[0])
                if num_samples is not None and got >= num_samples:
                    break
            if not parts:
                raise ValueError("the evaluation dataset gave no batches")
            columns = [np.concatenate([p[k] for p in parts]) for k in range(len(parts[0]))]
            return cls(columns, batch_size or len(parts[0][0]))
        if isinstance(data, (tuple, list)) and data and all(isinstance(c, np.ndarray) for c in data):
            n = len(data[0]) if num_samples is None else num_samples
            n = min(n, DEFAULT_ARRAY_SAMPLES) if num_samples is None else n
            return cls([c[:n] for c in data], batch_size or DEFAULT_ARRAY_BATCH)
        if isinstance(data, (tuple, list)) and data and all(isinstance(b, (tuple, list)) for b in data):
            batches = list(data)[:num_batches] if num_batches else list(data)
            columns = [np.concatenate([np.asarray(b[k]) for b in batches]) for k in range(len(batches[0]))]
            if num_samples is not None:
                columns = [c[:num_samples] for c in columns]
            return cls(columns, batch_size or len(batches[0][0]))
        raise TypeError("eval_data must be a MindSpore dataset, a tuple of numpy column arrays, a list of batches or "
                        "an EvalData, got %s" % type(data).__name__)


def _np_dtype(ms_dtype):
    """The numpy dtype of a MindSpore dtype, or None where numpy has none (bfloat16, float8).

    Not ``mindspore.dtype_to_nptype``: deprecated since MindSpore 2.7, it logs a warning on every call.
    """
    try:
        return np.dtype(str(ms_dtype).lower())      # Float32 -> float32, Bool -> bool
    except TypeError:
        return None


def _float_params(network):
    from mindspore.common import dtype as mstype

    return [p for p in network.trainable_params() if p.dtype in mstype.float_type]


def _cells(network):
    seen, out = set(), []
    for _, cell in network.cells_and_names():
        if id(cell) not in seen:
            seen.add(id(cell))
            out.append(cell)
    return out


class LossEvaluator:
    """Mean loss of ``loss_network`` over an :class:`EvalData`, with parameters set in place.

    ``loss_network(*batch_columns)`` must return the mean loss of the batch (e.g. ``nn.WithLossCell`` with a
    ``reduction="mean"`` loss); batches are weighted by their size. Use inside :meth:`session`.
    """

    def __init__(self, loss_network, data, parameters=None):
        self.network = loss_network
        self.data = data
        self.params = list(parameters) if parameters is not None else _float_params(loss_network)
        if not self.params:
            raise ValueError("the network has no trainable floating-point parameters")
        self.names = [p.name for p in self.params]
        self.dtypes = [_np_dtype(p.dtype) for p in self.params]
        self._inputs = [(len(b[0]), tuple(Tensor(c) for c in b)) for b in data.batches]
        self.evaluations = 0

    @property
    def num_samples(self):
        return self.data.num_samples

    def read(self):
        """Copies of the current parameter values (exact)."""
        return [p.asnumpy().copy() for p in self.params]

    def write(self, arrays, only=None):
        """Copies ``arrays`` into the parameters' own memory (``ops.assign``).

        Not ``Parameter.set_data``: in PYNATIVE_MODE that gives the parameter a new tensor, and graphs compiled with
        ``jit`` before (MindSpore's optimizers are) keep updating the old one, so training would silently go on
        from stale weights (seen with MindSpore 2.10).
        """
        for k in (range(len(self.params)) if only is None else only):
            a, dtype = arrays[k], self.dtypes[k]
            if dtype is None:
                ops.assign(self.params[k], Tensor(a, dtype=self.params[k].dtype))
                continue
            if a.dtype != dtype:
                a = a.astype(dtype)
            ops.assign(self.params[k], Tensor(a))

    def loss(self):
        total = 0.0
        for n, tensors in self._inputs:
            total += n * float(self.network(*tensors).asnumpy())
        self.evaluations += 1
        return total / self.num_samples

    @contextlib.contextmanager
    def session(self):
        """Eval mode in GRAPH_MODE; yields copies of the parameters; restores parameters, flags and mode exactly.

        GRAPH_MODE even when the caller trains in PYNATIVE_MODE: a ``jit`` graph built in PyNative mode does not see
        ``set_data`` on its parameters (MindSpore 2.10), a GRAPH_MODE cell call does.
        """
        saved = self.read()
        flags = [(c, getattr(c, "training", False), getattr(c, "_phase", None)) for c in _cells(self.network)]
        mode = ms.get_context("mode")
        try:
            if mode != ms.GRAPH_MODE:
                ms.set_context(mode=ms.GRAPH_MODE)
            self.network.set_train(False)
            yield [a.copy() for a in saved]
        finally:
            self.write(saved)
            for cell, training, phase in flags:
                cell.add_flags(training=training)
                if phase is not None:
                    cell._phase = phase
            if mode != ms.GRAPH_MODE:
                ms.set_context(mode=mode)



def resolve_loss_network(loss_network=None, network=None, loss_fn=None):
    """The cell to evaluate: ``loss_network``, or ``network`` wrapped with ``loss_fn`` (or ``network`` alone)."""
    if loss_network is not None:
        return loss_network
    if network is None:
        raise ValueError("give loss_network (a cell that returns the loss), or network and loss_fn")
    if loss_fn is None:
        return network
    return nn.WithLossCell(network, loss_fn)


def check_eval_data(data):
    """Raises ``TypeError`` unless ``data`` is something :meth:`EvalData.take` accepts (nothing is read)."""
    if isinstance(data, EvalData) or _is_dataset(data):
        return
    if isinstance(data, (tuple, list)) and data and (all(isinstance(c, np.ndarray) for c in data)
                                                     or all(isinstance(b, (tuple, list)) for b in data)):
        return
    raise TypeError("eval_data must be a MindSpore dataset, a tuple of numpy column arrays, a list of batches or "
                    "an EvalData, got %s" % type(data).__name__)
