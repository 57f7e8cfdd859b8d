"""Which points of a restarted series are its final timeline: the one rule for event files and ``*_MS`` files.

A series written in several pieces (several files in one run folder, or a file in which the steps go back: a
script re-run into the same folder, a resume from a checkpoint) is cut into *segments*, in the order they were
written: a new segment starts with each file and wherever the step goes down. A later segment supersedes the
earlier ones from its first step on: an earlier segment keeps only its points before the first step of every
later segment, what TensorBoard does for a restarted run ("purge orphaned data"). A resume from step 6 keeps the
first run's steps 1-5; a re-run of steps 1-10 replaces the first run's steps 1-10.

Pure helpers over numpy arrays; ``ms_logdir`` (per ``*_MS`` file) and ``series_store`` (per segment of our event
files) both cut with :func:`cut_steps`.
"""

import numpy as np


def cuts(first_steps):
    """Per segment, in write order, ``(step, index)``: the smallest first step of the segments after it, from which
    they supersede it, and the segment that has it (the earliest of equals); ``None`` for the last segment, or when
    no later segment has a first step (``None`` in ``first_steps``: a segment without this series)."""
    out = [None] * len(first_steps)
    low = None
    for i in range(len(first_steps) - 1, -1, -1):
        out[i] = low
        first = first_steps[i]
        if first is not None and (low is None or first <= low[0]):
            low = (first, i)
    return out


def cut_steps(first_steps):
    """The steps of :func:`cuts` alone."""
    return [None if c is None else c[0] for c in cuts(first_steps)]


def segment_starts(steps, previous=None):
    """Positions in ``steps`` (in write order) where a new segment starts because the step went down (from the
    point before it; the first point compares with ``previous``, the last step already written, if any)."""
    steps = np.asarray(steps)
    down = np.flatnonzero(steps[1:] < steps[:-1]) + 1
    if previous is not None and steps.size and steps[0] < previous:
        down = np.r_[0, down]
    return down


def superseded(segments):
    """``[(segment index, keep)]``: for segments ``[steps array, ...]`` in write order, the boolean mask of the
    points each keeps (steps before its cut step), for the segments that lose any."""
    cuts = cut_steps([int(s[0]) if len(s) else None for s in segments])
    out = []
    for i, (steps, cut) in enumerate(zip(segments, cuts)):
        if cut is None:
            continue
        keep = np.asarray(steps) < cut
        if not keep.all():
            out.append((i, keep))
    return out
