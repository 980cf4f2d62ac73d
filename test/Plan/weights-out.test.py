# Reads a safetensors file with the standard library alone and checks each
# tensor's bytes appear verbatim in the ONNX file (inline raw_data).
import json, struct, sys

data = open(sys.argv[1], "rb").read()
onnx = open(sys.argv[2], "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
header.pop("__metadata__", None)
body = data[8 + n:]
types = {t["dtype"] for t in header.values()}
verbatim = all(body[t["data_offsets"][0]:t["data_offsets"][1]] in onnx
               for t in header.values())
print(f"{len(header)} tensors, all {','.join(sorted(types))}, "
      f"{'every one stored as the export stored it' if verbatim else 'some differ'}")
for name, t in header.items():
    print(name, t["shape"])
