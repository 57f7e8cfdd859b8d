"""A bounded record of parameter snapshots along training (for PCA landscapes and interpolation).

Snapshots are taken every ``stride`` steps. When ``max_snapshots`` are held, every second one is dropped (the
first is always kept) and the stride doubles, so memory stays bounded however long training runs and the kept
snapshots stay evenly spaced over the whole run. The very first snapshot (the start of training) is kept
separately as well, for start-to-end interpolation.

Snapshots live in memory as float32 vectors, or, with ``directory``, in ``.npy`` files there (read back as memory
maps, so a PCA over many large snapshots does not need them all in RAM).
"""

import os

import numpy as np


class Trajectory:
    def __init__(self, max_snapshots=32, stride=1, directory=None):
        if isinstance(max_snapshots, bool) or not isinstance(max_snapshots, int) or max_snapshots < 3:
            raise ValueError("max_snapshots must be an int >= 3, got %r" % (max_snapshots,))
        if isinstance(stride, bool) or not isinstance(stride, int) or stride < 1:
            raise ValueError("stride must be an int >= 1, got %r" % (stride,))
        self.max_snapshots = max_snapshots
        self.stride = stride
        self.directory = directory
        if directory:
            os.makedirs(directory, exist_ok=True)
        self._items = []     # [(step, vector or path)]
        self.first = None    # (step, vector) of the first snapshot ever taken
        self._files = 0

    def __len__(self):
        return len(self._items)

    @property
    def steps(self):
        return [s for s, _ in self._items]

    def wants(self, step):
        """Whether a snapshot at ``step`` would be kept (call before taking the parameters off the device)."""
        if self._items and step <= self._items[-1][0]:
            return False
        return not self._items or step % self.stride == 0

    def add(self, step, vector):
        """Keeps ``vector`` (flat float32 parameters) for ``step`` if the schedule wants it; returns whether kept."""
        if not self.wants(step):
            return False
        vector = np.array(vector, dtype=np.float32, copy=True).reshape(-1)
        if self.first is None:
            self.first = (int(step), vector.copy())
        self._items.append((int(step), self._store(vector)))
        if len(self._items) >= self.max_snapshots:
            self._thin()
        return True

    def _store(self, vector):
        if not self.directory:
            return vector
        self._files += 1
        path = os.path.join(self.directory, "snapshot_%06d.npy" % self._files)
        np.save(path, vector)
        return path

    def _load(self, item):
        return np.load(item, mmap_mode="r") if isinstance(item, str) else item

    def _thin(self):
        while len(self._items) >= self.max_snapshots:
            self.stride *= 2
            first, rest = self._items[0], self._items[1:]
            keep = [first] + [it for it in rest if it[0] % self.stride == 0]
            if len(keep) == len(self._items):     # steps off the stride grid: drop every second one instead
                keep = self._items[::2]
            kept_ids = {id(it) for it in keep}
            dropped = [it for it in self._items if id(it) not in kept_ids]
            for _, item in dropped:
                if isinstance(item, str):
                    try:
                        os.remove(item)
                    except OSError:
                        pass
            self._items = keep

    def matrix(self, final=None, final_step=None):
        """``(steps, (n, D) float32 array)`` of the kept snapshots, plus ``final`` as the last row when given."""
        rows = [self._load(v) for _, v in self._items]
        steps = self.steps
        if final is not None and (not steps or final_step is None or final_step > steps[-1]):
            rows.append(np.asarray(final, dtype=np.float32).reshape(-1))
            steps = steps + [final_step if final_step is not None else (steps[-1] + 1 if steps else 0)]
        if not rows:
            return [], np.zeros((0, 0), dtype=np.float32)
        if not self.directory:
            return steps, np.stack(rows)
        path = os.path.join(self.directory, "matrix.npy")
        out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(len(rows), rows[0].size))
        for i, row in enumerate(rows):
            out[i] = row
        out.flush()
        return steps, np.load(path, mmap_mode="r")

    def nbytes(self):
        return sum(int(np.asarray(self._load(v)).nbytes) for _, v in self._items)

    def clear(self):
        for _, item in self._items:
            if isinstance(item, str):
                try:
                    os.remove(item)
                except OSError:
                    pass
        self._items = []
