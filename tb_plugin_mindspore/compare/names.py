"""Parameter names across frameworks: which layer of a run is which layer of its reference.

Both runs' layer names are brought to one vocabulary (PyTorch's / Hugging Face's), by rules applied in order:

1. the mapping file's explicit ``pairs`` (a run layer -> one reference layer, or a list of them for a fused weight)
   and its regular-expression ``rules`` (``{"run": REGEX, "reference": REPLACEMENT}``), run names only;
2. wrapper prefixes dropped on both sides (``module.``, ``_orig_mod.``, ``network.``, ``_backbone.``, ...);
3. the built-in rules, on both sides: MindSpore's ``gamma`` / ``beta`` / ``moving_mean`` / ``moving_variance`` /
   ``embedding_table`` are PyTorch's ``weight`` / ``bias`` / ``running_mean`` / ``running_var`` / ``weight``;
   mindformers' Llama names are Hugging Face's (``attention.wq`` -> ``self_attn.q_proj``, ``feed_forward.w1`` ->
   ``mlp.gate_proj``, ``w2`` -> ``down_proj``, ``w3`` -> ``up_proj``, ``attention_norm`` -> ``input_layernorm``,
   ``ffn_norm`` -> ``post_attention_layernorm``, ``norm_out`` -> ``norm``, ``tok_embeddings.embedding_weight`` ->
   ``embed_tokens.weight``, as mindformers' own checkpoint converter names them), and its fused weights are the
   concatenation of Hugging Face's (``attention.w_qkv`` = q, k, v projections; ``feed_forward.w_gate_hidden`` =
   gate and up projections).

A layer of one side whose name, so brought, matches no layer of the other is listed as unmapped (never dropped
silently). Shapes, when both runs recorded them, are checked: equal, transposed (said as such: norms do not
change), fused rows adding up, or a mismatch (that pair is left out of the comparison and listed).

A mapping file is JSON or YAML (YAML needs PyYAML)::

    {"pairs": {"backbone.blocks.0.attn.qkv.weight": ["h.0.attn.q.weight", "h.0.attn.k.weight", "h.0.attn.v.weight"],
               "head.kernel": "lm_head.weight"},
     "rules": [{"run": "^encoder\\.layer_(\\d+)\\.", "reference": "encoder.layer.\\1."}],
     "ignore": ["^loss_scale$"]}

Imports only the standard library.
"""

import json
import os
import re
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

__all__ = ["Pair", "Mapping", "MappingFile", "MappingError", "BUILTIN_RULES", "FUSED_RULES", "canonical",
           "map_layers", "load_mapping", "parse_mapping"]


class MappingError(ValueError):
    """A mapping file or mapping text that cannot be used (one-line message)."""


# (pattern, replacement, what it says) applied in order to each name on both sides.
BUILTIN_RULES = (
    (r"(^|\.)gamma$", r"\1weight", "MindSpore gamma = PyTorch weight (norm scale)"),
    (r"(^|\.)beta$", r"\1bias", "MindSpore beta = PyTorch bias (norm shift)"),
    (r"(^|\.)moving_mean$", r"\1running_mean", "MindSpore moving_mean = PyTorch running_mean"),
    (r"(^|\.)moving_variance$", r"\1running_var", "MindSpore moving_variance = PyTorch running_var"),
    (r"(^|\.)tok_embeddings\.embedding_weight$", r"\1embed_tokens.weight",
     "mindformers tok_embeddings.embedding_weight = Hugging Face embed_tokens.weight"),
    (r"(^|\.)embedding_table$", r"\1weight", "MindSpore embedding_table = PyTorch weight"),
    (r"\.attention\.wq\.", ".self_attn.q_proj.", "mindformers attention.wq = Hugging Face self_attn.q_proj"),
    (r"\.attention\.wk\.", ".self_attn.k_proj.", "mindformers attention.wk = Hugging Face self_attn.k_proj"),
    (r"\.attention\.wv\.", ".self_attn.v_proj.", "mindformers attention.wv = Hugging Face self_attn.v_proj"),
    (r"\.attention\.wo\.", ".self_attn.o_proj.", "mindformers attention.wo = Hugging Face self_attn.o_proj"),
    (r"\.feed_forward\.w1\.", ".mlp.gate_proj.", "mindformers feed_forward.w1 = Hugging Face mlp.gate_proj"),
    (r"\.feed_forward\.w2\.", ".mlp.down_proj.", "mindformers feed_forward.w2 = Hugging Face mlp.down_proj"),
    (r"\.feed_forward\.w3\.", ".mlp.up_proj.", "mindformers feed_forward.w3 = Hugging Face mlp.up_proj"),
    (r"\.attention_norm\.", ".input_layernorm.", "mindformers attention_norm = Hugging Face input_layernorm"),
    (r"\.ffn_norm\.", ".post_attention_layernorm.",
     "mindformers ffn_norm = Hugging Face post_attention_layernorm"),
    (r"(^|\.)norm_out\.", r"\1norm.", "mindformers norm_out = Hugging Face norm"),
)
# Fused weights: (pattern, [replacements], what it says); one layer on this side is several on the other.
FUSED_RULES = (
    (r"\.attention\.w_qkv\.", [".self_attn.q_proj.", ".self_attn.k_proj.", ".self_attn.v_proj."],
     "mindformers attention.w_qkv = Hugging Face q_proj, k_proj, v_proj (fused)"),
    (r"\.feed_forward\.w_gate_hidden\.", [".mlp.gate_proj.", ".mlp.up_proj."],
     "mindformers feed_forward.w_gate_hidden = Hugging Face gate_proj, up_proj (fused)"),
)
WRAPPER_PREFIX = re.compile(r"^(module|_orig_mod|network|_network|_backbone|net_with_loss|_net)\.")

_COMPILED = tuple((re.compile(p), r, what) for p, r, what in BUILTIN_RULES)
_FUSED = tuple((re.compile(p), rs, what) for p, rs, what in FUSED_RULES)


def _strip_wrappers(name):
    while True:
        stripped = WRAPPER_PREFIX.sub("", name, count=1)
        if stripped == name:
            return name
        name = stripped


def canonical(name):
    """``(canonical names, rules applied)``: one name, or several for a fused weight, in the common vocabulary."""
    name = _strip_wrappers(name)
    said = []
    for pattern, replacements, what in _FUSED:
        if pattern.search(name):
            parts = [pattern.sub(r, name) for r in replacements]
            said.append(what)
            out = []
            for part in parts:
                mapped, more = _apply(part)
                out.append(mapped)
                said.extend(m for m in more if m not in said)
            return out, said
    mapped, more = _apply(name)
    return [mapped], more


def _apply(name):
    said = []
    for pattern, replacement, what in _COMPILED:
        new = pattern.sub(replacement, name)
        if new != name:
            said.append(what)
            name = new
    return name, said


@dataclass
class Pair:
    """Run layers (one, or several fused) that are reference layers (one or several)."""

    run: List[str]
    reference: List[str]
    rule: str                                 # "same name", "built-in", "mapping file", "edited"
    notes: List[str] = field(default_factory=list)
    transposed: bool = False

    def to_json(self):
        return {"run": list(self.run), "reference": list(self.reference), "rule": self.rule,
                "notes": list(self.notes), "transposed": self.transposed}


@dataclass
class Mapping:
    """The pairs, and what is left: ``unmapped_run`` / ``unmapped_reference`` (no counterpart), ``shape_mismatches``
    (pairs whose recorded shapes disagree; not compared), ``ignored`` (left out by the mapping file)."""

    pairs: List[Pair] = field(default_factory=list)
    unmapped_run: List[str] = field(default_factory=list)
    unmapped_reference: List[str] = field(default_factory=list)
    shape_mismatches: List[dict] = field(default_factory=list)
    ignored: List[str] = field(default_factory=list)

    def to_json(self):
        return {"pairs": [p.to_json() for p in self.pairs], "unmapped_run": list(self.unmapped_run),
                "unmapped_reference": list(self.unmapped_reference),
                "shape_mismatches": list(self.shape_mismatches), "ignored": list(self.ignored)}


@dataclass
class MappingFile:
    """What a mapping file says: ``pairs`` {run name: [reference names]}, ``rules`` [(compiled regex, replacement)],
    ``ignore`` [compiled regex] (layers of either side left out)."""

    pairs: dict = field(default_factory=dict)
    rules: List[Tuple[re.Pattern, str]] = field(default_factory=list)
    ignore: List[re.Pattern] = field(default_factory=list)
    source: Optional[str] = None

    def is_empty(self):
        return not (self.pairs or self.rules or self.ignore)


def parse_mapping(obj, source="mapping", exact=False):
    """A :class:`MappingFile` from a decoded JSON / YAML object; raises :class:`MappingError` naming the field.

    ``exact``: what a request may send (the Compare view's edits): ``pairs``, and ``ignore`` as exact layer names;
    no regular expressions (a server never compiles one from a request)."""
    if obj is None:
        return MappingFile(source=source)
    if exact and isinstance(obj, dict) and obj.get("rules"):
        raise MappingError("%s: rules (regular expressions) belong in a mapping file; send pairs and ignore "
                           "(exact layer names)" % source)
    if not isinstance(obj, dict):
        raise MappingError("%s must be an object with 'pairs', 'rules' and/or 'ignore'" % source)
    unknown = sorted(set(obj) - {"pairs", "rules", "ignore"})
    if unknown:
        raise MappingError("%s: unknown field(s) %s (expected pairs, rules, ignore)" % (source, ", ".join(unknown)))
    pairs = {}
    raw_pairs = obj.get("pairs") or {}
    if not isinstance(raw_pairs, dict):
        raise MappingError("%s: 'pairs' must map a run layer to a reference layer or a list of them" % source)
    for run_name, ref in raw_pairs.items():
        refs = [ref] if isinstance(ref, str) else ref
        if not isinstance(refs, list) or not refs or not all(isinstance(r, str) and r for r in refs):
            raise MappingError("%s: pairs[%r] must be a reference layer name or a list of them" % (source, run_name))
        pairs[str(run_name)] = list(refs)
    rules = []
    for i, rule in enumerate(obj.get("rules") or []):
        if not isinstance(rule, dict) or not isinstance(rule.get("run"), str) or \
                not isinstance(rule.get("reference"), str):
            raise MappingError("%s: rules[%d] must be {\"run\": REGEX, \"reference\": REPLACEMENT}" % (source, i))
        try:
            rules.append((re.compile(rule["run"]), rule["reference"]))
        except re.error as e:
            raise MappingError("%s: rules[%d] is not a valid regular expression: %s" % (source, i, e)) from None
    ignore = []
    for i, pattern in enumerate(obj.get("ignore") or []):
        if exact:
            pattern = "^%s$" % re.escape(str(pattern))
        try:
            ignore.append(re.compile(str(pattern)))
        except re.error as e:
            raise MappingError("%s: ignore[%d] is not a valid regular expression: %s" % (source, i, e)) from None
    return MappingFile(pairs=pairs, rules=rules, ignore=ignore, source=source)


def load_mapping(path):
    """A :class:`MappingFile` from a ``.json`` / ``.yaml`` / ``.yml`` file; :class:`MappingError` if unreadable."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise MappingError("cannot read the mapping file %s: %s" % (path, e.strerror or e)) from None
    ext = os.path.splitext(str(path))[1].lower()
    if ext in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:
            raise MappingError("reading %s needs PyYAML (pip install pyyaml), or write the mapping as JSON"
                               % path) from None
        try:
            obj = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise MappingError("%s is not valid YAML: %s" % (path, str(e).splitlines()[0])) from None
    else:
        try:
            obj = json.loads(text)
        except ValueError as e:
            raise MappingError("%s is not valid JSON: %s" % (path, e)) from None
    return parse_mapping(obj, source=os.path.basename(str(path)))


def _shape_note(run_shapes, ref_shapes):
    """``(ok, transposed, note)`` for the recorded shapes of a pair (None: not recorded)."""
    if any(s is None for s in run_shapes) or any(s is None for s in ref_shapes):
        return True, False, None
    run_shapes = [tuple(s) for s in run_shapes]
    ref_shapes = [tuple(s) for s in ref_shapes]
    if len(run_shapes) == 1 and len(ref_shapes) == 1:
        a, b = run_shapes[0], ref_shapes[0]
        if a == b:
            return True, False, None
        if len(a) == 2 and a == b[::-1]:
            return True, True, "transposed (%s here, %s in the reference): norms and ratios are unchanged" % (
                "x".join(map(str, a)), "x".join(map(str, b)))
        return False, False, "shapes differ: %s against %s" % ("x".join(map(str, a)), "x".join(map(str, b)))
    # Fused on one side: the rows (first dimension) add up, the other dimensions agree.
    many, one = (run_shapes, ref_shapes[0]) if len(ref_shapes) == 1 else (ref_shapes, run_shapes[0])
    rows = sum(s[0] for s in many if s)
    if all(len(s) == len(one) for s in many) and one and rows == one[0] and all(s[1:] == one[1:] for s in many):
        return True, False, None
    if all(len(s) == 2 for s in many) and len(one) == 2 and all(s[1] == one[0] for s in many) and \
            sum(s[0] for s in many) == one[1]:
        return True, True, "fused weight stored transposed: norms are unchanged"
    return False, False, "fused shapes do not add up: %s against %s" % (
        " + ".join("x".join(map(str, s)) for s in many), "x".join(map(str, one)))


def map_layers(run_layers, reference_layers, mapping_file=None, run_shapes=None, reference_shapes=None):
    """The :class:`Mapping` of two runs' layer names (each in its run's order). ``run_shapes`` /
    ``reference_shapes``: ``{name: shape}`` where recorded."""
    mf = mapping_file or MappingFile()
    run_shapes = run_shapes or {}
    reference_shapes = reference_shapes or {}
    out = Mapping()
    run_layers = [n for n in run_layers if not _ignored(n, mf, out)]
    reference_layers = [n for n in reference_layers if not _ignored(n, mf, out)]
    ref_set = set(reference_layers)
    ref_by_canonical = {}
    for name in reference_layers:
        names, _ = canonical(name)
        ref_by_canonical.setdefault(names[0] if len(names) == 1 else tuple(names), name)
    taken = set()
    for name in run_layers:
        refs, rule, notes = _counterpart(name, mf, ref_set, ref_by_canonical)
        if refs is None or any(r in taken for r in refs):
            out.unmapped_run.append(name)
            continue
        ok, transposed, note = _shape_note([run_shapes.get(name)], [reference_shapes.get(r) for r in refs])
        if not ok:
            out.shape_mismatches.append({"run": [name], "reference": refs, "note": note})
            taken.update(refs)
            continue
        if note:
            notes = notes + [note]
        taken.update(refs)
        out.pairs.append(Pair([name], refs, rule, notes, transposed))
    # Fused on the reference side (several run layers are one reference layer).
    fused_refs = {}
    for name in reference_layers:
        names, said = canonical(name)
        if len(names) > 1 and name not in taken:
            fused_refs[name] = (names, said)
    if fused_refs:
        run_by_canonical = {canonical(n)[0][0]: n for n in out.unmapped_run}
        for ref, (names, said) in fused_refs.items():
            runs = [run_by_canonical.get(n) for n in names]
            if all(runs):
                ok, transposed, note = _shape_note([run_shapes.get(r) for r in runs], [reference_shapes.get(ref)])
                for r in runs:
                    out.unmapped_run.remove(r)
                if not ok:
                    out.shape_mismatches.append({"run": runs, "reference": [ref], "note": note})
                else:
                    out.pairs.append(Pair(runs, [ref], "built-in", said + ([note] if note else []), transposed))
                taken.add(ref)
    out.unmapped_reference = [n for n in reference_layers if n not in taken]
    return out


def _ignored(name, mf, out):
    if any(p.search(name) for p in mf.ignore):
        if name not in out.ignored:
            out.ignored.append(name)
        return True
    return False


def _counterpart(name, mf, ref_set, ref_by_canonical):
    """``(reference names, rule, notes)`` of one run layer, or ``(None, None, None)``."""
    if name in mf.pairs:
        refs = mf.pairs[name]
        if all(r in ref_set for r in refs):
            return refs, "mapping file", []
        return None, None, None
    for pattern, replacement in mf.rules:
        if pattern.search(name):
            mapped = pattern.sub(replacement, name)
            if mapped in ref_set:
                return [mapped], "mapping file", []
    if name in ref_set:
        return [name], "same name", []
    names, said = canonical(name)
    if len(names) == 1:
        ref = ref_by_canonical.get(names[0])
        if ref is not None:
            return [ref], "built-in", said or ["wrapper prefix"]
        return None, None, None
    refs = [ref_by_canonical.get(n) for n in names]
    if all(refs):
        return refs, "built-in", said
    return None, None, None
