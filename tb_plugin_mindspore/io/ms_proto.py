"""MindSpore's summary messages (``Event``, ``Summary``, ``LossLandscape``, ``LineageEvent``), defined here.

Viewing MindSpore's ``_MS`` files must work without MindSpore installed, so this module builds the message classes
at import time from a ``FileDescriptorProto`` written in Python (no generated code, no ``protoc``). The field numbers
are those of MindSpore's public ``summary.proto`` / ``anf_ir.proto`` / ``lineage.proto`` (package
``mindspore.irpb``), which ``tests/reading`` checks against the generated classes of the installed MindSpore.

Deliberate differences from MindSpore's definitions, all wire compatible:

* Every field is ``optional``: a file from a writer that left out a ``required`` field still parses.
* Tags and free-text strings that the reader must never fail on are ``bytes`` (decoded with ``errors="replace"``).
* ``Event.graph_def`` and ``Event.explain`` are ``bytes``: the reader keeps the computational graph's bytes and
  parses them only when the graph is asked for (:data:`GraphProto`, ``ms_graph.py``); explainer data is skipped.
* ``TensorProto.data_type`` is an ``int32`` rather than the ``DataType`` enum, so that unknown codes are kept.
* The classes live in a private descriptor pool, so they never clash with MindSpore's own classes when both are
  imported in one process.

Public names: :data:`Event`, :data:`Summary`, :data:`GraphProto`, :data:`LossLandscape`, :data:`TensorProto`, :data:`LineageEvent`,
:data:`UserDefinedInfo`, :data:`TrainLineage`, :data:`EvaluationLineage`, :data:`DatasetGraph`,
:data:`DATA_TYPES` (MindSpore ``DataType`` code -> name), and two views of the same bytes for the fast path:
:data:`EventView` (an ``Event`` whose ``summary`` stays bytes) and :data:`SummaryView` (a ``Summary`` whose
values stay bytes).
"""

from google.protobuf import descriptor_pb2, descriptor_pool

try:  # protobuf >= 4.21
    from google.protobuf.message_factory import GetMessageClass as _get_class
except ImportError:  # pragma: no cover - older protobuf
    from google.protobuf import message_factory as _mf

    _factory = _mf.MessageFactory()

    def _get_class(descriptor):
        return _factory.GetPrototype(descriptor)

_F = descriptor_pb2.FieldDescriptorProto
PACKAGE = "tb_plugin_mindspore.ms"

# MindSpore's DataType enum (anf_ir.proto). Only the numeric tensor types matter to the reader.
DATA_TYPES = {
    0: "DT_UNDEFINED", 1: "DT_BOOL", 2: "DT_INT8", 3: "DT_INT16", 4: "DT_INT32", 5: "DT_INT64", 6: "DT_UINT8",
    7: "DT_UINT16", 8: "DT_UINT32", 9: "DT_UINT64", 10: "DT_FLOAT16", 11: "DT_FLOAT32", 12: "DT_FLOAT64",
    13: "DT_STRING", 43: "DT_COMPLEX64", 44: "DT_COMPLEX128", 46: "DT_BFLOAT16",
}

_SCALAR_TYPES = {
    "double": _F.TYPE_DOUBLE, "float": _F.TYPE_FLOAT, "int64": _F.TYPE_INT64, "uint64": _F.TYPE_UINT64,
    "int32": _F.TYPE_INT32, "bool": _F.TYPE_BOOL, "string": _F.TYPE_STRING, "bytes": _F.TYPE_BYTES,
}

# Message layouts: name -> list of fields (number, name, type, label, extra). ``type`` is a scalar type name or the
# full name of a message (relative to PACKAGE). ``label`` is "optional" or "repeated"; "packed" marks packed
# repeated numbers; a "map" field gets a generated entry type; ``oneof`` names a oneof group.
_MESSAGES = {
    # anf_ir.proto
    "TensorProto": [
        (1, "dims", "int64", "repeated", {}),
        (2, "data_type", "int32", "optional", {}),
        (3, "float_data", "float", "repeated", {"packed": True}),
        (4, "int32_data", "int32", "repeated", {"packed": True}),
        (5, "int64_data", "int64", "repeated", {"packed": True}),
        (6, "double_data", "double", "repeated", {"packed": True}),
        (7, "uint64_data", "uint64", "repeated", {"packed": True}),
        (8, "raw_data", "bytes", "optional", {}),
    ],
    # anf_ir.proto: the computational graph (Event.graph_def, parsed on its own by ``ms_graph.py``)
    "GraphProto": [
        (1, "node", "NodeProto", "repeated", {}),
        (2, "name", "bytes", "optional", {}),
        (3, "parameters", "ParameterProto", "repeated", {}),
        (4, "outputs", "OutputProto", "repeated", {}),
        (5, "const_vals", "NamedValueProto", "repeated", {}),
    ],
    "NodeProto": [
        (1, "input", "InputProto", "repeated", {}),
        (2, "name", "bytes", "optional", {}),
        (3, "op_type", "bytes", "optional", {}),
        (4, "scope", "bytes", "optional", {}),
        (5, "attribute", "AttributeProto", "repeated", {}),
        (6, "output_type", "TypeProto", "optional", {}),
        (7, "output_i", "uint64", "optional", {}),
        (8, "full_name", "bytes", "optional", {}),
        (10, "instance_name", "bytes", "optional", {}),
    ],
    "InputProto": [
        (1, "name", "bytes", "optional", {}),
        (2, "type", "int32", "optional", {}),
    ],
    "AttributeProto": [
        (1, "name", "bytes", "optional", {}),
        (2, "value", "ValueProto", "optional", {}),
    ],
    "NamedValueProto": [
        (1, "key", "bytes", "optional", {}),
        (2, "value", "ValueProto", "optional", {}),
    ],
    "ValueProto": [
        (1, "dtype", "int32", "optional", {}),
        (2, "bool_val", "bool", "optional", {}),
        (3, "int_val", "int64", "optional", {}),
        (4, "uint_val", "uint64", "optional", {}),
        (5, "float_val", "float", "optional", {}),
        (6, "double_val", "double", "optional", {}),
        (7, "str_val", "bytes", "optional", {}),
        (8, "tensor_val", "TensorProto", "optional", {}),
        (9, "graph", "GraphProto", "optional", {}),
        (10, "bool_vals", "bool", "repeated", {}),
        (11, "int_vals", "int64", "repeated", {}),
        (12, "uint_vals", "uint64", "repeated", {}),
        (13, "float_vals", "float", "repeated", {}),
        (14, "double_vals", "double", "repeated", {}),
        (15, "str_vals", "bytes", "repeated", {}),
        (16, "tensor_vals", "TensorProto", "repeated", {}),
        (17, "graphs", "GraphProto", "repeated", {}),
        (18, "values", "ValueProto", "repeated", {}),
        (19, "dict_val", "NamedValueProto", "repeated", {}),
        (20, "type_val", "TypeProto", "optional", {}),
    ],
    "TypeProto": [
        (1, "data_type", "int32", "optional", {}),
        (2, "tensor_type", "TypeProto.Tensor", "optional", {"oneof": "value"}),
        (3, "sequence_type", "TypeProto.Sequence", "optional", {"oneof": "value"}),
    ],
    "TypeProto.Tensor": [
        (1, "elem_type", "int32", "optional", {}),
        (2, "shape", "TensorShapeProto", "optional", {}),
    ],
    "TypeProto.Sequence": [
        (1, "elem_types", "TypeProto", "repeated", {}),
    ],
    "TensorShapeProto": [
        (1, "dim", "TensorShapeProto.Dimension", "repeated", {}),
    ],
    "TensorShapeProto.Dimension": [
        (1, "size", "int64", "optional", {}),
        (2, "name", "bytes", "optional", {}),
    ],
    "ParameterProto": [
        (1, "name", "bytes", "optional", {}),
        (2, "type", "TypeProto", "optional", {}),
        (3, "default_val", "ValueProto", "optional", {}),
    ],
    "OutputProto": [
        (1, "name", "bytes", "optional", {}),
        (2, "type", "TypeProto", "optional", {}),
    ],
    # summary.proto
    "Event": [
        (1, "wall_time", "double", "optional", {}),
        (2, "step", "int64", "optional", {}),
        (3, "version", "bytes", "optional", {"oneof": "what"}),
        (4, "graph_def", "bytes", "optional", {"oneof": "what"}),
        (5, "summary", "Summary", "optional", {"oneof": "what"}),
        (6, "explain", "bytes", "optional", {"oneof": "what"}),
    ],
    "LossLandscape": [
        (1, "landscape", "LossLandscape.Point", "optional", {}),
        (2, "loss_path", "LossLandscape.LossPath", "optional", {}),
        (3, "metadata", "LossLandscape.Metadata", "optional", {}),
        (4, "convergence_point", "LossLandscape.Point", "optional", {}),
    ],
    "LossLandscape.Point": [
        (1, "x", "TensorProto", "optional", {}),
        (2, "y", "TensorProto", "optional", {}),
        (3, "z", "TensorProto", "optional", {}),
    ],
    "LossLandscape.LossPath": [
        (1, "intervals", "int32", "repeated", {}),
        (2, "points", "LossLandscape.Point", "optional", {}),
    ],
    "LossLandscape.Metadata": [
        (1, "decomposition", "bytes", "optional", {}),
        (2, "unit", "bytes", "optional", {}),
        (3, "step_per_epoch", "int32", "optional", {}),
    ],
    "Summary": [
        (1, "value", "Summary.Value", "repeated", {}),
    ],
    "Summary.Image": [
        (1, "height", "int32", "optional", {}),
        (2, "width", "int32", "optional", {}),
        (3, "colorspace", "int32", "optional", {}),
        (4, "encoded_image", "bytes", "optional", {}),
    ],
    "Summary.Histogram": [
        (1, "buckets", "Summary.Histogram.bucket", "repeated", {}),
        (2, "nan_count", "int64", "optional", {}),
        (3, "pos_inf_count", "int64", "optional", {}),
        (4, "neg_inf_count", "int64", "optional", {}),
        (5, "max", "double", "optional", {}),
        (6, "min", "double", "optional", {}),
        (7, "sum", "double", "optional", {}),
        (8, "count", "int64", "optional", {}),
    ],
    "Summary.Histogram.bucket": [
        (1, "left", "double", "optional", {}),
        (2, "width", "double", "optional", {}),
        (3, "count", "int64", "optional", {}),
    ],
    "Summary.Value": [
        (1, "tag", "bytes", "optional", {}),
        (3, "scalar_value", "float", "optional", {"oneof": "value"}),
        (4, "image", "Summary.Image", "optional", {"oneof": "value"}),
        (8, "tensor", "TensorProto", "optional", {"oneof": "value"}),
        (9, "histogram", "Summary.Histogram", "optional", {"oneof": "value"}),
        (10, "loss_landscape", "LossLandscape", "optional", {"oneof": "value"}),
    ],
    # lineage.proto
    "LineageEvent": [
        (1, "wall_time", "double", "optional", {}),
        (2, "step", "int64", "optional", {}),
        (3, "version", "bytes", "optional", {"oneof": "what"}),
        (6, "train_lineage", "TrainLineage", "optional", {"oneof": "what"}),
        (7, "evaluation_lineage", "EvaluationLineage", "optional", {"oneof": "what"}),
        (9, "dataset_graph", "DatasetGraph", "optional", {"oneof": "what"}),
        (10, "user_defined_info", "UserDefinedInfo", "optional", {"oneof": "what"}),
    ],
    "UserDefinedInfo": [
        (1, "user_info", "UserDefinedInfo", "repeated", {}),
        (2, "map_dict", "UserDefinedInfo", "repeated", {"map": "MapDictEntry"}),
        (3, "map_int32", "int32", "repeated", {"map": "MapInt32Entry"}),
        (4, "map_str", "string", "repeated", {"map": "MapStrEntry"}),
        (5, "map_double", "double", "repeated", {"map": "MapDoubleEntry"}),
    ],
    "TrainLineage": [
        (1, "hyper_parameters", "TrainLineage.HyperParameters", "optional", {}),
        (2, "train_dataset", "TrainLineage.TrainDataset", "optional", {}),
        (3, "algorithm", "TrainLineage.Algorithm", "optional", {}),
        (4, "model", "TrainLineage.Model", "optional", {}),
    ],
    "TrainLineage.HyperParameters": [
        (1, "optimizer", "string", "optional", {}),
        (2, "learning_rate", "float", "optional", {}),
        (3, "loss_function", "string", "optional", {}),
        (4, "epoch", "int32", "optional", {}),
        (5, "parallel_mode", "string", "optional", {}),
        (6, "device_num", "int32", "optional", {}),
        (8, "batch_size", "int32", "optional", {}),
    ],
    "TrainLineage.TrainDataset": [
        (1, "train_dataset_path", "string", "optional", {}),
        (2, "train_dataset_size", "int32", "optional", {}),
    ],
    "TrainLineage.Algorithm": [
        (1, "network", "string", "optional", {}),
        (2, "loss", "float", "optional", {}),
    ],
    "TrainLineage.Model": [
        (3, "path", "string", "optional", {}),
        (4, "size", "int64", "optional", {}),
    ],
    "EvaluationLineage": [
        (2, "metric", "string", "optional", {}),
        (3, "valid_dataset", "EvaluationLineage.ValidDataset", "optional", {}),
    ],
    "EvaluationLineage.ValidDataset": [
        (1, "valid_dataset_path", "string", "optional", {}),
        (2, "valid_dataset_size", "int32", "optional", {}),
    ],
    "DatasetGraph": [
        (1, "children", "DatasetGraph", "repeated", {}),
        (2, "parameter", "OperationParameter", "optional", {}),
        (3, "operations", "Operation", "repeated", {}),
        (4, "sampler", "Operation", "optional", {}),
    ],
    "Operation": [
        (1, "operationParam", "OperationParameter", "optional", {}),
        (2, "size", "int32", "repeated", {}),
        (3, "weights", "float", "repeated", {}),
    ],
    "OperationParameter": [
        (1, "mapStr", "string", "repeated", {"map": "MapStrEntry"}),
        (2, "mapStrList", "StrList", "repeated", {"map": "MapStrListEntry"}),
        (3, "mapBool", "bool", "repeated", {"map": "MapBoolEntry"}),
        (4, "mapInt", "int32", "repeated", {"map": "MapIntEntry"}),
        (5, "mapDouble", "double", "repeated", {"map": "MapDoubleEntry"}),
    ],
    "StrList": [
        (1, "strValue", "string", "repeated", {}),
    ],
}


# Views of the same bytes for the reader's fast path: the summary and its values stay undecoded bytes, so a record
# costs one C-level parse and its values can be split without building a Python object per value.
_VIEWS = {
    "EventView": [
        (1, "wall_time", "double", "optional", {}),
        (2, "step", "int64", "optional", {}),
        (3, "version", "bytes", "optional", {"oneof": "what"}),
        (4, "graph_def", "bytes", "optional", {"oneof": "what"}),
        (5, "summary", "bytes", "optional", {"oneof": "what"}),
        (6, "explain", "bytes", "optional", {"oneof": "what"}),
    ],
    "SummaryView": [
        (1, "value", "bytes", "repeated", {}),
    ],
    # anf_ir.proto's ModelProto (what ``Cell.get_func_graph_proto()`` returns), only its graph, as bytes.
    "ModelView": [
        (4, "graph", "bytes", "optional", {}),
    ],
}
VIEW_OF = {"EventView": "Event", "SummaryView": "Summary", "ModelView": "ModelProto"}


def _set_type(field, type_name):
    if type_name in _SCALAR_TYPES:
        field.type = _SCALAR_TYPES[type_name]
    else:
        field.type = _F.TYPE_MESSAGE
        field.type_name = ".%s.%s" % (PACKAGE, type_name)


def _file_descriptor():
    fdp = descriptor_pb2.FileDescriptorProto(name="tb_plugin_mindspore_ms.proto", package=PACKAGE, syntax="proto2")
    protos = {}
    layouts = dict(_MESSAGES, **_VIEWS)
    # Parents before children.
    for full_name in sorted(layouts, key=lambda n: n.count(".")):
        parent, _, short = full_name.rpartition(".")
        container = protos[parent].nested_type if parent else fdp.message_type
        protos[full_name] = container.add(name=short)
    for full_name, fields in layouts.items():
        msg = protos[full_name]
        oneofs = {}
        for number, name, type_name, label, extra in fields:
            field = msg.field.add(name=name, number=number)
            field.label = _F.LABEL_REPEATED if label == "repeated" else _F.LABEL_OPTIONAL
            if "map" in extra:
                entry = msg.nested_type.add(name=extra["map"])
                entry.options.map_entry = True
                # The key of every MindSpore map is a string.
                entry.field.add(name="key", number=1, label=_F.LABEL_OPTIONAL, type=_F.TYPE_STRING)
                value = entry.field.add(name="value", number=2, label=_F.LABEL_OPTIONAL)
                _set_type(value, type_name)
                field.type = _F.TYPE_MESSAGE
                field.type_name = ".%s.%s.%s" % (PACKAGE, full_name, extra["map"])
            else:
                _set_type(field, type_name)
            if extra.get("packed"):
                field.options.packed = True
            if "oneof" in extra:
                if extra["oneof"] not in oneofs:
                    oneofs[extra["oneof"]] = len(msg.oneof_decl)
                    msg.oneof_decl.add(name=extra["oneof"])
                field.oneof_index = oneofs[extra["oneof"]]
    return fdp


_POOL = descriptor_pool.DescriptorPool()
_POOL.AddSerializedFile(_file_descriptor().SerializeToString())


def _cls(name):
    return _get_class(_POOL.FindMessageTypeByName("%s.%s" % (PACKAGE, name)))


TensorProto = _cls("TensorProto")
Event = _cls("Event")
Summary = _cls("Summary")
# Nested classes by name: the pure-Python protobuf (which importing MindSpore forces through
# PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python) does not attach them to their parent class.
SummaryValue = _cls("Summary.Value")
LossLandscape = _cls("LossLandscape")
LineageEvent = _cls("LineageEvent")
UserDefinedInfo = _cls("UserDefinedInfo")
TrainLineage = _cls("TrainLineage")
EvaluationLineage = _cls("EvaluationLineage")
DatasetGraph = _cls("DatasetGraph")
EventView = _cls("EventView")
GraphProto = _cls("GraphProto")
ModelView = _cls("ModelView")
SummaryView = _cls("SummaryView")

# (message name, field name) pairs whose type differs from MindSpore's on purpose (see the module docstring).
RELAXED_FIELDS = {
    ("Event", "version"), ("Event", "graph_def"), ("Event", "explain"), ("LineageEvent", "version"),
    ("Summary.Value", "tag"), ("LossLandscape.Metadata", "decomposition"), ("LossLandscape.Metadata", "unit"),
    ("TensorProto", "data_type"),
    # anf_ir.proto: names and strings as bytes (never a decoding failure), enums as int32 (unknown codes kept)
    ("GraphProto", "name"), ("NodeProto", "name"), ("NodeProto", "op_type"), ("NodeProto", "scope"),
    ("NodeProto", "full_name"), ("NodeProto", "instance_name"), ("InputProto", "name"), ("InputProto", "type"),
    ("AttributeProto", "name"), ("NamedValueProto", "key"), ("ValueProto", "dtype"), ("ValueProto", "str_val"),
    ("ValueProto", "str_vals"), ("TypeProto", "data_type"), ("TypeProto.Tensor", "elem_type"),
    ("TensorShapeProto.Dimension", "name"), ("ParameterProto", "name"), ("OutputProto", "name"),
}
MESSAGE_LAYOUTS = _MESSAGES
