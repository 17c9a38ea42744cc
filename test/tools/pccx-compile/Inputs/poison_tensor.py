"""Sets elements of one tensor of a safetensors checkpoint to NaN or Inf.

usage: poison_tensor.py CKPT_DIR NAME_SUFFIX nan|inf COUNT
Prints the name of the tensor changed (the first whose name ends with
NAME_SUFFIX and has no 'layers.' in it, so a model-level tensor)."""
import glob
import json
import struct
import sys

ckpt, suffix, kind, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
patterns = {"nan": {"BF16": b"\xc0\x7f", "F16": b"\x00\x7e", "F32": b"\x00\x00\xc0\x7f"},
            "inf": {"BF16": b"\x80\x7f", "F16": b"\x00\x7c", "F32": b"\x00\x00\x80\x7f"}}
for path in sorted(glob.glob(ckpt + "/*.safetensors")):
    data = bytearray(open(path, "rb").read())
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    for name, info in sorted(header.items()):
        if name == "__metadata__" or not name.endswith(suffix) or "layers." in name:
            continue
        value = patterns[kind][info["dtype"]]
        start = 8 + n + info["data_offsets"][0]
        for i in range(count):
            data[start + i * len(value):start + (i + 1) * len(value)] = value
        open(path, "wb").write(data)
        print(name)
        sys.exit(0)
sys.exit("no tensor ends with " + suffix)
