"""Computational graphs: MindSpore's ``anf_ir`` GraphProto (``SummaryCollector(collect_graph=True)``, the
``graph_def`` of a ``*_MS`` file's event) and TensorBoard's GraphDef, as one list of nodes.

* :func:`from_anf` parses MindSpore's bytes (``ms_proto.GraphProto``): every operator node with its type, scope
  (the cells it sits in: ``Default/network-WithLossCell/_backbone-Net/fc-Dense``), output dtype and shape, and its
  inputs; the parameters and constants it reads.
* :func:`from_graphdef` reads a TensorBoard GraphDef (what ``convert`` and ``TrainMonitor(graph=True)`` write).
* :func:`to_graphdef` writes TensorBoard's GraphDef, so TensorBoard's Graphs tab draws a converted run: node names
  are the scope path (TensorBoard groups on ``/``), the op type, the inputs and ``_output_shapes`` kept.
* :func:`view` is the ``graph`` route's answer: nodes with ids, and the scope tree the page collapses and expands.

A graph of more than ``MAX_NODES`` nodes is not sent node by node: the answer says how large it is and gives the
node count of each top-level scope (never dropped without a word).
"""

import collections

from ..io import ms_proto

MAX_NODES = 20000
Node = collections.namedtuple("Node", "name op scope kind dtype shape inputs attrs")
Node.__doc__ = """One node: ``name`` (unique, the scope path with the node's own name), ``op`` (operator type),
``scope`` ("" at the top), ``kind`` ("op", "parameter", "const" or "output"), ``dtype`` (str or ""), ``shape``
(list of ints, -1 unknown; a list of shapes for a tuple output; None unknown), ``inputs`` (names), ``attrs``
({name: short text})."""

# MindSpore's DataType enum (anf_ir.proto), by code.
_DTYPE = dict(enumerate((
    "", "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
    "float64", "string", "tensor", "graph", "bools", "ints8", "ints16", "ints32", "ints64", "uints8", "uints16",
    "uints32", "uints64", "floats16", "floats32", "floats64", "strings", "tensors", "graphs", "tuple", "list",
    "dict", "none", "sym_inst", "base_int", "base_uint", "base_float", "type", "any", "refkey", "ref", "complex64",
    "complex128", "base_complex", "bfloat16", "bfloats16", "int4", "slice")))


class GraphError(ValueError):
    """Bytes that are not a graph (a one-line reason)."""


def _text(raw):
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw or "")


def _type_of(t):
    """``(dtype, shape)`` of a MindSpore TypeProto."""
    which = t.WhichOneof("value")
    if which == "tensor_type":
        dims = [int(d.size) for d in t.tensor_type.shape.dim]
        return _DTYPE.get(t.tensor_type.elem_type, str(t.tensor_type.elem_type)), dims
    if which == "sequence_type":
        parts = [_type_of(e) for e in t.sequence_type.elem_types]
        return "tuple(%s)" % ", ".join(d for d, _ in parts[:8]), [s for _, s in parts]
    return _DTYPE.get(t.data_type, str(t.data_type)) if t.data_type else "", None


def _value_text(v, depth=0):
    """A short text of a ValueProto (attributes are shown, never interpreted)."""
    if depth > 3:
        return "..."
    for field, fmt in (("str_val", _text), ("bool_val", str), ("int_val", str), ("uint_val", str),
                       ("float_val", repr), ("double_val", repr)):
        if v.HasField(field):
            return fmt(getattr(v, field))[:200]
    for field in ("int_vals", "uint_vals", "float_vals", "double_vals", "bool_vals"):
        values = list(getattr(v, field))
        if values:
            return "[%s%s]" % (", ".join(str(x) for x in values[:16]), ", ..." if len(values) > 16 else "")
    if v.str_vals:
        return "[%s]" % ", ".join(_text(x)[:40] for x in v.str_vals[:8])
    if v.values:
        return "(%s)" % ", ".join(_value_text(x, depth + 1) for x in v.values[:8])
    if v.HasField("tensor_val"):
        return "tensor%s" % list(v.tensor_val.dims)
    if v.HasField("type_val"):
        return _type_of(v.type_val)[0]
    return ""


def from_anf(raw):
    """``(graph name, [Node])`` of MindSpore's GraphProto bytes; raises :class:`GraphError`."""
    try:
        g = ms_proto.GraphProto.FromString(bytes(raw))
    except Exception as e:  # damaged bytes behind a good checksum
        raise GraphError("not a MindSpore graph (%s)" % str(e).splitlines()[0][:120])
    nodes = []
    names = {}
    for p in g.parameters:
        name = _text(p.name)
        dtype, shape = _type_of(p.type)
        names[name] = name
        nodes.append(Node(name, "Parameter", "", "parameter", dtype, shape, [], {}))
    for c in g.const_vals:
        key = _text(c.key)
        names[key] = "Const/" + key
        nodes.append(Node("Const/" + key, "Const", "Const", "const", "", None, [], {"value": _value_text(c.value)}))
    for n in g.node:
        own = _text(n.name)
        scope = _text(n.scope)
        full = _text(n.full_name) or ((scope + "/" if scope else "") + _text(n.op_type) + "-op" + own)
        names[own] = full
    for n in g.node:
        own = _text(n.name)
        dtype, shape = _type_of(n.output_type) if n.HasField("output_type") else ("", None)
        attrs = {_text(a.name): _value_text(a.value) for a in n.attribute[:32]}
        if n.instance_name:
            attrs["instance_name"] = _text(n.instance_name)
        inputs = [names.get(_text(i.name), _text(i.name)) for i in n.input]
        nodes.append(Node(names[own], _text(n.op_type), _text(n.scope), "op", dtype, shape, inputs, attrs))
    for i, o in enumerate(g.outputs):
        dtype, shape = _type_of(o.type)
        src = names.get(_text(o.name), _text(o.name))
        nodes.append(Node("Output/%d" % i, "Output", "Output", "output", dtype, shape, [src], {}))
    return _text(g.name), nodes


def from_model(raw):
    """``(graph name, [Node])`` of MindSpore's ModelProto bytes (what ``Cell.get_func_graph_proto()`` returns: the
    GraphProto is its field 4); raises :class:`GraphError`."""
    try:
        graph = ms_proto.ModelView.FromString(bytes(raw)).graph
    except Exception as e:
        raise GraphError("not a MindSpore model (%s)" % str(e).splitlines()[0][:120])
    return from_anf(graph)


def from_graphdef(raw):
    """``(graph name, [Node])`` of a TensorBoard GraphDef; raises :class:`GraphError`."""
    from tensorboard.compat.proto import graph_pb2

    try:
        g = graph_pb2.GraphDef.FromString(bytes(raw))
    except Exception as e:
        raise GraphError("not a TensorBoard graph (%s)" % str(e).splitlines()[0][:120])
    nodes = []
    for n in g.node:
        shape = None
        if "_output_shapes" in n.attr and n.attr["_output_shapes"].list.shape:
            shapes = [[int(d.size) for d in s.dim] for s in n.attr["_output_shapes"].list.shape]
            shape = shapes[0] if len(shapes) == 1 else shapes
        dtype = n.attr["_dtype"].s.decode("utf-8", "replace") if "_dtype" in n.attr else ""
        scope = n.name.rpartition("/")[0]
        kind = {"Parameter": "parameter", "Const": "const", "Output": "output"}.get(n.op, "op")
        attrs = {k: v.s.decode("utf-8", "replace")[:200] for k, v in n.attr.items()
                 if k not in ("_output_shapes", "_dtype") and v.WhichOneof("value") == "s"}
        nodes.append(Node(n.name, n.op, scope, kind, dtype, shape, [i.lstrip("^") for i in n.input], attrs))
    return "", nodes


def to_graphdef(nodes):
    """A TensorBoard ``GraphDef`` of the nodes (op types, inputs, output shapes and dtypes kept)."""
    from tensorboard.compat.proto import attr_value_pb2, graph_pb2, tensor_shape_pb2

    g = graph_pb2.GraphDef()
    for node in nodes:
        nd = g.node.add(name=node.name, op=node.op or "Unknown")
        nd.input.extend(node.inputs)
        if node.shape is not None:
            listed = attr_value_pb2.AttrValue.ListValue()
            for s in _shapes(node.shape):
                shape = tensor_shape_pb2.TensorShapeProto(unknown_rank=s is None)
                for d in s or ():
                    shape.dim.add(size=int(d))
                listed.shape.append(shape)
            nd.attr["_output_shapes"].list.CopyFrom(listed)
        if node.dtype:
            nd.attr["_dtype"].s = node.dtype.encode("utf-8")
        for k, v in node.attrs.items():
            nd.attr[k].s = str(v).encode("utf-8")
    return g


def _is_dims(shape):
    return isinstance(shape, list) and all(isinstance(d, int) for d in shape)


def _shapes(shape):
    """The output shapes of a node: one for a tensor, one per element of a tuple (None: unknown)."""
    if _is_dims(shape):
        return [shape]
    return [s if _is_dims(s) else None for s in shape] if isinstance(shape, list) else [None]


def scope_counts(nodes, depth=1):
    """``{top-level scope: node count}``."""
    out = collections.Counter()
    for n in nodes:
        out["/".join(n.scope.split("/")[:depth]) if n.scope else "(top)"] += 1
    return dict(out)


def view(name, nodes, max_nodes=MAX_NODES):
    """The ``graph`` route's body (without run and step): ``{"name", "total_nodes", "ops", "too_large",
    "scope_counts", "nodes": [{"id", "name", "op", "scope", "kind", "dtype", "shape", "inputs": [ids], "attrs"}]}``.
    ``nodes`` is empty and ``too_large`` a sentence when the graph has more than ``max_nodes`` nodes."""
    ops = collections.Counter(n.op for n in nodes if n.kind == "op")
    body = {"name": name, "total_nodes": len(nodes), "ops": dict(ops.most_common(50)),
            "scope_counts": scope_counts(nodes), "too_large": None, "nodes": []}
    if len(nodes) > max_nodes:
        body["too_large"] = ("The graph has %d nodes, more than the %d the view draws; its top-level scopes and "
                             "operator counts are listed. `tb-mindspore convert` writes it for TensorBoard's "
                             "Graphs tab." % (len(nodes), max_nodes))
        return body
    ids = {n.name: i for i, n in enumerate(nodes)}
    body["nodes"] = [{"id": i, "name": n.name, "op": n.op, "scope": n.scope, "kind": n.kind, "dtype": n.dtype,
                      "shape": n.shape, "inputs": [ids[x] for x in n.inputs if x in ids], "attrs": n.attrs}
                     for i, n in enumerate(nodes)]
    return body
