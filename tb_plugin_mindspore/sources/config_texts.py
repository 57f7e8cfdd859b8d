"""The hyperparameters in the configurations trainers write as text summaries: mindformers' YAML configuration and
Hugging Face's ``TrainingArguments`` with its model's configuration.

* mindformers: with ``tensorboard: {tensorboard_dir: ...}`` in its configuration, its Trainer writes every top-level
  key once, at step 1, as a text summary (tensorboardX's ``add_text``: tag ``<key>/text_summary``, the text Python's
  ``str()`` of the value: ``"{'type': 'AdamW', 'weight_decay': 0.01}"``, ``"1234"``) into
  ``<tensorboard_dir>/rank_<k>/``. A run holding ``runner_config/text_summary`` is read as one.
* Hugging Face: its ``TensorBoardCallback`` writes ``args/text_summary`` (the ``TrainingArguments`` as JSON) and
  ``model_config/text_summary`` (the model's configuration as JSON) at train begin. A run holding
  ``args/text_summary`` is read as one.

:func:`hyperparameters` turns those texts into ``{dotted name: value}`` (``runner_config.batch_size``,
``lr_schedule.learning_rate``, ``args.per_device_train_batch_size``, ``model_config.hidden_size``), keeping only
names that ``contract/hparam_names.py`` knows as a hyperparameter (a configuration has hundreds of keys: paths,
switches, parallel layouts) and, of the names of one hyperparameter, the one that wins: mindformers' top-level values
first, then its runner, learning-rate schedule, optimizer and model, then the rest (the top-level ``seed`` wins over
``train_dataset.data_loader.config.seed``). Texts are read as JSON or Python literals only (never evaluated).
"""

import ast
import collections
import json
import re

from ..contract import hparam_names

TEXT_PLUGIN = "text"
TAG_SUFFIX = "/text_summary"

# source: the run_info answer's name of it; marker: the section whose text summary says a run holds one;
# sections: the sections read (None: every one); preferred: the sections whose names win, in order (after the
# top-level values); the other sections follow in their order.
Writer = collections.namedtuple("Writer", "source marker sections preferred")
WRITERS = (
    Writer("mindformers_config", "runner_config", None,
           ("runner_config", "lr_schedule", "optimizer", "model", "parallel_config", "runner_wrapper")),
    Writer("hf_training_args", "args", ("args", "model_config"), ("args", "model_config")),
)
SOURCES = tuple(w.source for w in WRITERS)
_MAX_DEPTH = 8
# A ``'key': value`` pair whose value is a string, number, bool or None literal.
_PAIR = re.compile(r"""'(\w+)': ('[^'\\]*'|-?\d+(?:\.\d*)?(?:e[-+]?\d+)?|True|False|None)(?=[,}])""")


def section_of(tag):
    """``"lr_schedule"`` of ``"lr_schedule/text_summary"``; None for another tag."""
    if not tag.endswith(TAG_SUFFIX) or tag.count("/") != 1:
        return None
    return tag[: -len(TAG_SUFFIX)] or None


def writer_of(tags):
    """The :data:`WRITERS` entry whose configuration a run's text tags hold, or None."""
    sections = {section_of(t) for t in tags}
    for writer in WRITERS:
        if writer.marker in sections:
            return writer
    return None


def config_tags(writer, tags):
    """The tags of ``tags`` that hold sections of ``writer``'s configuration, sorted."""
    return sorted(t for t in tags if section_of(t) and (writer.sections is None or section_of(t) in writer.sections))


def parse_text(text):
    """The value a text summary holds: a dict, list, number, bool or None when the text is JSON or a Python literal;
    for a dict that holds objects (mindformers' Trainer writes its ``optimizer`` with its ``Parameter`` objects and
    schedule cell) the ``'key': literal`` pairs found in it, the first of each key; else the text itself."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    text = text.strip()
    for parse in (json.loads, ast.literal_eval):
        try:
            return parse(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
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


def hyperparameters(writer, sections):
    """``{dotted name: value}`` of the hyperparameters in ``{section: text}`` (``writer``'s text summaries by
    section), the names that win first (see the module's docstring)."""
    values = {section: parse_text(text) for section, text in sections.items()}
    order = [s for s, v in values.items() if not isinstance(v, dict)]
    order += [s for s in writer.preferred if isinstance(values.get(s), dict)]
    order += [s for s, v in values.items() if isinstance(v, dict) and s not in writer.preferred]
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
