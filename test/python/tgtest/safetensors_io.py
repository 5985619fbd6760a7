"""Minimal safetensors reader/writer for tests (no `safetensors` package here)."""
import json
import struct

import numpy as np
import torch

_DTYPES = {
    torch.float64: "F64", torch.float32: "F32", torch.int32: "I32",
    torch.int64: "I64", torch.bfloat16: "BF16", torch.float16: "F16",
}
_NUMPY = {"F64": np.float64, "F32": np.float32, "I32": np.int32,
          "I64": np.int64, "F16": np.float16}


def save(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().contiguous()
        data = t.view(torch.int16).numpy().tobytes() if t.dtype == torch.bfloat16 \
            else t.numpy().tobytes()
        header[name] = {"dtype": _DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def load(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        if info["dtype"] == "BF16":
            words = np.frombuffer(data[begin:end], dtype=np.int16).copy()
            t = torch.from_numpy(words).view(torch.bfloat16)
        else:
            t = torch.from_numpy(np.frombuffer(data[begin:end], dtype=_NUMPY[info["dtype"]]).copy())
        out[name] = t.reshape(info["shape"])
    return out
