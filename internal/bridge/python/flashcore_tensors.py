"""Tensors between the host's files and the device: loading inputs (and
hashing the bytes loaded), poisoning output buffers, writing outputs.

Every file is the raw little-endian bytes of a dense, row-major array
(sdk.TensorFile). Attention's inputs arrive as Q, K and V of a shape
(load_inputs); every other op's as named files with their own dims and
dtype (load_tensors). torch and numpy are imported where they are used.
"""

import dataclasses
import hashlib
import math

POISON_BYTE = 0xFF

# int32 is the type of index tensors: a paged cache's block table, sequence
# lengths, cumulative sequence offsets.
DTYPE_SIZES = {"fp16": 2, "bf16": 2, "fp32": 4, "int32": 4}


def torch_dtype(name):
    import torch

    return {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32, "int32": torch.int32}[name]


def dtype_size(name):
    """The bytes of one element of dtype name; ValueError for a dtype the
    worker does not know."""
    try:
        return DTYPE_SIZES[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one the worker reads (it reads {', '.join(DTYPE_SIZES)})") from None


@dataclasses.dataclass(frozen=True)
class TensorFile:
    """sdk.TensorFile: one named tensor of a case and the file that holds it."""

    name: str
    path: str
    dtype: str
    dims: tuple

    @classmethod
    def from_json(cls, t):
        return cls(name=t["name"], path=t["path"], dtype=t["dtype"], dims=tuple(int(d) for d in t.get("dims") or ()))

    @property
    def nbytes(self):
        return math.prod(self.dims) * dtype_size(self.dtype)

    def __str__(self):
        return f"{self.name}[{', '.join(str(d) for d in self.dims)}] {self.dtype}"


def load_inputs(files, shape, device):
    """Reads Q, K and V from the host's files and returns them on device,
    with the hex SHA-256 of the bytes loaded, Q then K then V."""
    import numpy
    import torch

    digest = hashlib.sha256()
    dtype = torch_dtype(shape.dtype)
    tensors = []
    for key, dims in (("Q", shape.q_shape), ("K", shape.kv_shape), ("V", shape.kv_shape)):
        path = files[key]
        raw = numpy.fromfile(path, dtype=numpy.uint8)
        want = math.prod(dims) * DTYPE_SIZES[shape.dtype]
        if raw.size != want:
            raise ValueError(f"{path}: {raw.size} bytes, want {want} for {key} of {shape}")
        digest.update(raw)
        tensor = torch.from_numpy(raw).view(dtype).reshape(dims)
        tensors.append(tensor.to(device))
    return tensors, digest.hexdigest()


def load_tensors(files, device):
    """Reads each of files (TensorFile, in the op's order) and returns them
    on device by name, in that order, with the hex SHA-256 of every byte
    loaded, file after file: the input hash of the contract, as for
    attention's Q, K and V."""
    import numpy
    import torch

    digest = hashlib.sha256()
    tensors = {}
    for f in files:
        if f.name in tensors:
            raise ValueError(f"input {f.name!r} is named twice")
        want = f.nbytes
        raw = numpy.fromfile(f.path, dtype=numpy.uint8)
        if raw.size != want:
            raise ValueError(f"{f.path}: {raw.size} bytes, want {want} for {f}")
        digest.update(raw)
        tensors[f.name] = torch.from_numpy(raw).view(torch_dtype(f.dtype)).reshape(f.dims).to(device)
    return tensors, digest.hexdigest()


def as_tensors(value):
    """A kernel's outputs or output buffers as a list: None is none, a
    tensor is one, a tuple or list is several (in the op's order)."""
    if value is None:
        return []
    if isinstance(value, (tuple, list)):
        return list(value)
    return [value]


def check_outputs(result, files, told):
    """result (what one call returned) as a list of tensors, one per file;
    ValueError naming told when their number, shape or dtype differ from
    what the files declare, since the host would read such bytes wrongly."""
    outputs = as_tensors(result)
    if len(outputs) != len(files):
        raise ValueError(f"{told} returned {len(outputs)} outputs, want {len(files)} ({', '.join(map(str, files))})")
    for tensor, f in zip(outputs, files):
        if not hasattr(tensor, "shape") or not hasattr(tensor, "dtype"):
            raise TypeError(f"{told} returned {type(tensor).__name__} for {f.name}, want a torch.Tensor {f}")
        if tuple(tensor.shape) != f.dims:
            raise ValueError(f"{told}: output {f.name} has shape {tuple(tensor.shape)}, want {f.dims}")
        if tensor.dtype != torch_dtype(f.dtype):
            raise ValueError(f"{told}: output {f.name} is {tensor.dtype}, want {torch_dtype(f.dtype)} ({f.dtype})")
    return outputs


def poison(tensor):
    """Fills tensor's bytes with POISON_BYTE (a NaN no arithmetic makes)."""
    import torch

    tensor.view(torch.uint8).fill_(POISON_BYTE)


def write_tensor(path, tensor):
    """Writes tensor's raw little-endian bytes to path."""
    import torch

    raw = tensor.detach().contiguous().cpu().view(torch.uint8).numpy()
    raw.tofile(path)

