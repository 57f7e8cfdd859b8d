"""The hyperparameters in mindformers' YAML configuration, as its Trainer writes it into its TensorBoard folder.

With ``tensorboard: {tensorboard_dir: ...}`` in its configuration, mindformers' Trainer writes every top-level key
of the configuration once, at step 1, as a text summary (tensorboardX's ``add_text``: tag ``<key>/text_summary``,
the text Python's ``str()`` of the value: ``"{'type': 'AdamW', 'weight_decay': 0.01}"``, ``"1234"``) into
``<tensorboard_dir>/rank_<k>/``. A run holding ``runner_config/text_summary`` is read as such a configuration.

:func:`hyperparameters` turns those texts into ``{dotted name: value}`` (``runner_config.batch_size``,
``lr_schedule.learning_rate``, ``optimizer.type``), keeping only names that ``contract/hparam_names.py`` knows as a
hyperparameter (the configuration has hundreds of keys: paths, switches, parallel layouts) and, of the names of one
hyperparameter, the one that wins: top-level values first, then the runner, the learning-rate schedule, the
optimizer, the model, then the rest (the top-level ``seed`` wins over ``train_dataset.data_loader.config.seed``).
Texts are parsed with ``ast.literal_eval`` only (never evaluated).
"""

import ast
import re

from ..contract import hparam_names

TEXT_PLUGIN = "text"
TAG_SUFFIX = "/text_summary"
MARKER_TAG = "runner_config" + TAG_SUFFIX
# The sections whose names win, in order (after the top-level values); the other sections follow in their order.
PREFERRED_SECTIONS = ("runner_config", "lr_schedule", "optimizer", "model", "parallel_config", "runner_wrapper")
_MAX_DEPTH = 8
# A ``'key': value`` pair whose value is a string, number, bool or None literal.
_PAIR = re.compile(r"""'(\w+)': ('[^'\\]*'|-?\d+(?:\.\d*)?(?:e[-+]?\d+)?|True|False|None)(?=[,}])""")


def is_config_run(tags):
    """True when a run's text tags hold mindformers' configuration (``runner_config/text_summary`` among them)."""
    return MARKER_TAG in tags


def section_of(tag):
    """``"lr_schedule"`` of ``"lr_schedule/text_summary"``; None for another tag."""
    if not tag.endswith(TAG_SUFFIX) or tag.count("/") != 1:
        return None
    return tag[: -len(TAG_SUFFIX)] or None


def parse_text(text):
    """The value a text summary holds: a dict, list, number, bool or None when the text is a Python literal; for a
    dict that holds objects (the Trainer's ``optimizer`` holds its ``Parameter`` objects and schedule cell) the
    ``'key': literal`` pairs found in it, the first of each key; else the text itself."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    text = text.strip()
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    if not text.startswith("{"):
        return text
    pairs = {}
    for key, literal in _PAIR.findall(text):
        try:
            pairs.setdefault(key, ast.literal_eval(literal))
        except (ValueError, SyntaxError):
            continue
    return pairs


def _flatten(prefix, value, out, depth=0):
    if isinstance(value, dict) and depth < _MAX_DEPTH:
        for key, inner in value.items():
            _flatten("%s.%s" % (prefix, key), inner, out, depth + 1)
    elif value is not None and value != "" and isinstance(value, (bool, int, float, str)):
        out.setdefault(prefix, value)


def hyperparameters(sections):
    """``{dotted name: value}`` of the hyperparameters in ``{section: text}`` (mindformers' text summaries by
    section), the names that win first (see the module's docstring)."""
    values = {section: parse_text(text) for section, text in sections.items()}
    order = [s for s, v in values.items() if not isinstance(v, dict)]
    order += [s for s in PREFERRED_SECTIONS if isinstance(values.get(s), dict)]
    order += [s for s, v in values.items() if isinstance(v, dict) and s not in PREFERRED_SECTIONS]
    flat = {}
    for section in order:
        _flatten(section, values[section], flat)
    out, seen = {}, set()
    for name, value in flat.items():
        canonical = hparam_names.canonical_name(name)
        if canonical in hparam_names.CANONICAL and canonical not in seen and hparam_names.is_hyperparameter(name):
            seen.add(canonical)
            out[name] = value
    return out
