"""A tiny reader and writer of the safetensors format for F32 tensors, in pure Python (struct + json; torch only
where tensors are asked for), so that the PyTorch comparison tests can exchange parameters with ShardScope's C++
reader and writer (engine/exec/data/safetensors.h) without the `safetensors` package.

The format: 8 bytes little-endian unsigned header size N; N bytes of UTF-8 JSON mapping each tensor name to
{"dtype": "F32", "shape": [...], "data_offsets": [begin, end]} (offsets relative to the data buffer that follows),
plus an optional "__metadata__" object of strings; the header padded with spaces so that the data starts 8-byte
aligned; then the tensors' raw little-endian row-major bytes, tiling the buffer in order.

    save(path, {"w": ([2, 3], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]), "b": torch.zeros(3)}, metadata={"format": "pt"})
    tensors = load(path)          # {"w": tensor of shape (2, 3), "b": ...}, float32
"""

import json
import struct
import sys

_MAX_HEADER = 100_000_000  # the reference implementation refuses larger headers


def _as_shape_and_values(name, value):
    """(shape list, flat list of floats) from a (shape, values) pair or a torch tensor."""
    if isinstance(value, tuple) and len(value) == 2:
        shape, values = list(value[0]), [float(v) for v in value[1]]
    else:  # a torch.Tensor (not imported here, so that plain lists need no torch)
        shape = list(value.shape)
        values = value.detach().to("cpu").contiguous().reshape(-1).tolist()
    numel = 1
    for dim in shape:
        if not isinstance(dim, int) or dim < 0:
            raise ValueError(f"tensor {name!r}: bad shape {shape}")
        numel *= dim
    if numel != len(values):
        raise ValueError(f"tensor {name!r}: shape {shape} does not match its {len(values)} values")
    return shape, values


def save(path, tensors, metadata=None):
    """Writes `tensors` (name -> (shape list, flat float list) or torch.Tensor) as F32, in the dict's order."""
    header = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    data = bytearray()
    for name, value in tensors.items():
        if name == "__metadata__":
            raise ValueError("the tensor name __metadata__ is reserved")
        shape, values = _as_shape_and_values(name, value)
        begin = len(data)
        data += struct.pack(f"<{len(values)}f", *values)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [begin, len(data)]}
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)  # data starts 8-byte aligned after the 8-byte size
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        f.write(data)


def _layout(blob, path):
    """Checks the header as the reference validator does; [(name, shape, begin, end)] in offset order and the
    position where the data buffer starts."""
    if len(blob) < 8:
        raise ValueError(f"{path}: shorter than 8 bytes")
    (size,) = struct.unpack_from("<Q", blob, 0)
    if size > _MAX_HEADER or size > len(blob) - 8:
        raise ValueError(f"{path}: bad header size {size}")
    header = json.loads(bytes(blob[8:8 + size]).decode("utf-8"))
    header.pop("__metadata__", None)
    buffer_size = len(blob) - 8 - size
    layout, covered = [], 0
    for name, entry in sorted(header.items(), key=lambda item: (tuple(item[1]["data_offsets"]), item[0])):
        if entry["dtype"] != "F32":
            raise ValueError(f"{path}: tensor {name!r}: dtype {entry['dtype']} (only F32 is read here)")
        begin, end = entry["data_offsets"]
        numel = 1
        for dim in entry["shape"]:
            numel *= dim
        if begin != covered or end - begin != 4 * numel or end > buffer_size:
            raise ValueError(f"{path}: tensor {name!r}: bad data_offsets {[begin, end]}")
        layout.append((name, list(entry["shape"]), begin, end))
        covered = end
    if covered != buffer_size:
        raise ValueError(f"{path}: bytes {covered}..{buffer_size} of the data buffer belong to no tensor")
    return layout, 8 + size


def load_raw(path):
    """name -> (shape list, flat list of floats), in the order of their data offsets; no torch needed."""
    with open(path, "rb") as f:
        blob = f.read()
    layout, data = _layout(blob, path)
    return {name: (shape, list(struct.unpack_from(f"<{(end - begin) // 4}f", blob, data + begin)))
            for name, shape, begin, end in layout}


def load(path):
    """name -> torch.Tensor (float32, in the file's shape), in the order of their data offsets."""
    import torch

    # torch.frombuffer reads host byte order; the file is little-endian.
    if sys.byteorder != "little":
        raise RuntimeError("load() needs a little-endian host; use load_raw()")
    with open(path, "rb") as f:
        blob = bytearray(f.read())  # writable, so frombuffer does not warn
    layout, data = _layout(blob, path)
    out = {}
    for name, shape, begin, end in layout:
        if end == begin:
            out[name] = torch.zeros(shape, dtype=torch.float32)
        else:
            flat = torch.frombuffer(blob, dtype=torch.float32, count=(end - begin) // 4, offset=data + begin)
            out[name] = flat.reshape(shape).clone()  # clone: no tensor keeps the whole file's buffer alive
    return out
