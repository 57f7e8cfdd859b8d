"""Tensors of any numeric dtype (MindSpore's ``TensorSummary`` as ``tb-mindspore convert`` writes it): raw bytes
with TensorBoard's dtype; the plugin content keeps the numpy dtype name."""

import numpy as np

from .. import metadata

_DTYPE_NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
                "float32", "float64", "complex64", "complex128")


def _tb_dtype(name):
    from tensorboard.compat.proto import types_pb2

    return {"bool": types_pb2.DT_BOOL, "int8": types_pb2.DT_INT8, "int16": types_pb2.DT_INT16,
            "int32": types_pb2.DT_INT32, "int64": types_pb2.DT_INT64, "uint8": types_pb2.DT_UINT8,
            "uint16": types_pb2.DT_UINT16, "uint32": types_pb2.DT_UINT32, "uint64": types_pb2.DT_UINT64,
            "float16": types_pb2.DT_HALF, "float32": types_pb2.DT_FLOAT, "float64": types_pb2.DT_DOUBLE,
            "complex64": types_pb2.DT_COMPLEX64, "complex128": types_pb2.DT_COMPLEX128}.get(name)


def value(tag, array, description=""):
    """``Summary.Value`` of one tensor (other dtypes are written as float64)."""
    from tensorboard.compat.proto import summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2

    array = np.asarray(array)
    dtype = _tb_dtype(array.dtype.name)
    if dtype is None:
        array, dtype = array.astype(np.float64), types_pb2.DT_DOUBLE
    shape = tensor_shape_pb2.TensorShapeProto(
        dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=int(n)) for n in array.shape])
    return summary_pb2.Summary.Value(
        tag=tag,
        metadata=metadata.create_summary_metadata(metadata.KIND_TENSOR, description=description,
                                                  dtype=array.dtype.name),
        tensor=tensor_pb2.TensorProto(dtype=dtype, tensor_shape=shape,
                                      tensor_content=np.ascontiguousarray(array).tobytes()),
    )


def dtype_of(content):
    """The numpy dtype name the content records (``None`` when absent or unknown)."""
    name = (content or {}).get("dtype")
    return name if name in _DTYPE_NAMES else None


def decode(content, array):
    """One stored tensor as a numpy array, in the dtype the content records when it names one."""
    a = np.asarray(array)
    name = dtype_of(content)
    if name is not None and a.dtype.name != name and a.dtype.kind in "biufc":
        try:
            return a.astype(name)
        except (TypeError, ValueError):
            return a
    return a
