#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (fuzz/corpus/<target>/) and
dictionaries (fuzz/dicts/) from the repository's test fixtures and examples.
Standard library only; run it again when the fixtures change:

    python3 fuzz/make_corpus.py
"""
import hashlib
import json
import os
import shutil
import struct
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")
DICTS = os.path.join(ROOT, "fuzz", "dicts")


def compact(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def write_seeds(target, seeds):
    folder = os.path.join(CORPUS, target)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    for name, data in seeds:
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)


def examples():
    out = []
    for name in sorted(os.listdir(os.path.join(ROOT, "examples"))):
        path = os.path.join(ROOT, "examples", name, "graph.json")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                out.append((name, json.load(f)))
    return out


def layer_specs():
    """(name, spec, input shape): the examples' SequentialModels and one
    single-layer spec per layer type with its default params."""
    shapes = {"fashion-mnist": [1, 28, 28], "fashion-mnist-925": [1, 28, 28], "codefyui-pipeline": [1, 28, 28],
              "toy-mlp": [2], "csv-mlp": [4], "forecast-tcn-transformer": [24, 1]}
    out = []
    for name, g in examples():
        for n in g["nodes"]:
            if n["type"] == "SequentialModel" and "layers" in n["data"].get("params", {}):
                out.append((name, json.loads(n["data"]["params"]["layers"]), shapes.get(name, [1, 28, 28])))
    with open(os.path.join(ROOT, "web", "tests", "fixtures", "layers.json"), encoding="utf-8") as f:
        table = json.load(f)
    for layer in table:
        params = {p["name"]: p["default"] for p in layer["params"] if p["default"] is not None}
        inputs = max(1, layer["min_inputs"])
        nodes = [{"id": "in", "type": "Input", "ports": [{"id": "p_x", "name": "x"}]},
                 {"id": "l", "type": layer["type"], "params": params},
                 {"id": "out", "type": "Output", "ports": [{"id": "p_y", "name": "y"}]}]
        edges = [{"id": "e%d" % i, "source": "in", "target": "l", "sourceHandle": "p_x", "targetHandle": None}
                 for i in range(inputs)]
        edges.append({"id": "eo", "source": "l", "target": "out", "sourceHandle": None, "targetHandle": "p_y"})
        shape = [3, 8, 8] if "2d" in layer["type"].lower() else [8, 16] if "1d" in layer["type"].lower() else [16]
        out.append(("layer-" + layer["type"], {"version": 2, "nodes": nodes, "edges": edges}, shape))
    return out


def graph_seeds():
    seeds = [(name + ".json", compact(g)) for name, g in examples()]
    with open(os.path.join(ROOT, "tests", "fixtures", "ddp_tiny.json"), "rb") as f:
        seeds.append(("ddp_tiny.json", compact(json.loads(f.read()))))
    return seeds


def ws_seeds():
    seeds = []
    for name, g in examples()[:8]:
        execute = dict(g)
        execute.update({"action": "execute", "graph_id": name, "run_id": "r-" + name, "device": "cpu"})
        seeds.append((name + ".txt", compact(execute) + b"\0" + compact({"action": "stop"})))
    small = {"action": "execute", "graph_id": "g", "nodes": [{"id": "s", "type": "Start", "data": {"params": {}}}],
             "edges": [], "changed_nodes": ["s"], "record_outputs": True, "weights_persistent": False}
    seeds.append(("start-only.txt", compact(small)))
    seeds.append(("replace.txt", compact(small) + b"\0" + compact(small) + b"\0" + compact({"action": "clear_cache"})))
    seeds.append(("example.txt", compact(dict(small, example="toy-mlp/graph.json"))))
    seeds.append(("stop-idle.txt", compact({"action": "stop"}) + b"\0" + b'{"action": 5}' + b"\0" + b"[1,2"))
    return seeds


def torch_zip(pkl, storages):
    """A torch.save zip: archive/data.pkl and archive/data/<key>, stored."""
    import io
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", pkl)
        for key, data in storages.items():
            z.writestr("archive/data/" + key, data)
        z.writestr("archive/version", b"3\n")
    return buf.getvalue()


def pickle_seeds():
    seeds = []
    for name in ("python_dict.pt", "python_linear_state_dict.pt"):
        path = os.path.join(ROOT, "tests", "fixtures", name)
        with open(path, "rb") as f:
            raw = f.read()
        seeds.append((name, raw))  # a whole zip
        with zipfile.ZipFile(path) as z:
            pkl = [n for n in z.namelist() if n.endswith("/data.pkl")][0]
            seeds.append((name + ".pkl", z.read(pkl)))  # the pickle, zipped by the target

    def le(v, n):
        return v.to_bytes(n, "little")

    def short_str(s):
        return b"X" + le(len(s), 4) + s

    def tensor(key, numel, dtype=b"FloatStorage", size=None, stride=None):
        size = size if size is not None else [numel]
        stride = stride if stride is not None else [1]
        tup = lambda xs: b"(" + b"".join(b"J" + le(x, 4) for x in xs) + b"t"
        return (b"ctorch._utils\n_rebuild_tensor_v2\n(" +
                b"(" + short_str(b"storage") + b"ctorch\n" + dtype + b"\n" + short_str(key) + short_str(b"cpu") +
                b"J" + le(numel, 4) + b"tQ" + b"K\x00" + tup(size) + tup(stride) + b"\x89" + b"tR")

    proto = b"\x80\x02"
    # A dict of two tensors over the target's storages data/0 (64 bytes) and data/1 (7 bytes).
    seeds.append(("dict.pkl", proto + b"}(" + short_str(b"w") + tensor(b"0", 16) + short_str(b"b") +
                  tensor(b"1", 7, b"ByteStorage") + b"u."))
    seeds.append(("view.pkl", proto + b"}" + short_str(b"v") + tensor(b"0", 16, size=[2, 3], stride=[3, 1]) + b"s."))
    seeds.append(("ordered.pkl", proto + b"ccollections\nOrderedDict\n)R" + short_str(b"x") + tensor(b"0", 4) +
                  b"s."))
    seeds.append(("dict.pt", torch_zip(proto + b"}" + short_str(b"w") + tensor(b"0", 4) + b"s.",
                                       {"0": struct.pack("<4f", 1, 2, 3, 4)})))
    return seeds


def safetensors(tensors, metadata=None):
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def safetensors_seeds():
    return [
        ("f32.safetensors", safetensors([("w", "F32", [2, 3], struct.pack("<6f", *range(6)))], {"format": "pt"})),
        ("mixed.safetensors", safetensors([("a", "I64", [2], struct.pack("<2q", -1, 7)),
                                           ("b", "BOOL", [3], b"\x00\x01\x01"),
                                           ("c", "BF16", [1, 2], b"\x80\x3f\x00\x40"),
                                           ("d", "F16", [0], b""),
                                           ("e", "U8", [], b"\x05")])),
        ("empty.safetensors", safetensors([], {})),
    ]


def multipart_seeds():
    def form(boundary, parts, preamble=b""):
        body = preamble
        for headers, data in parts:
            body += b"--" + boundary + b"\r\n" + headers + b"\r\n\r\n" + data + b"\r\n"
        return body + b"--" + boundary + b"--\r\n"

    upload = form(b"XyZ", [(b'Content-Disposition: form-data; name="file"; filename="w.pt"\r\n'
                            b"Content-Type: application/octet-stream", b"\x00\x01PK\r\n--Xy")])
    two = (b"preamble\r\n--b\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nhello\r\n"
           b"--b\r\ncontent-disposition: form-data; name=\"file\"; filename=\"w.pt\"\r\n\r\n"
           b"a\r\n--b-not-yet\r\nz\r\n--b--\r\n")
    return [
        ("upload.txt", b"\x07multipart/form-data; boundary=XyZ\n" + upload),
        ("two-parts.txt", b"\x02multipart/form-data; boundary=\"b\"\n" + two),
        ("no-end.txt", b"\x00multipart/form-data; boundary=b\n--b\r\nno end"),
    ]


def csv_seeds():
    seeds = []
    for rel in ("examples/csv-mlp/flowers.csv", "examples/iris-classifier/synthetic_iris.csv"):
        with open(os.path.join(ROOT, rel), "rb") as f:
            lines = f.read().splitlines(keepends=True)
        seeds.append((os.path.basename(rel), b"\x03" + b"".join(lines[:12])))
    seeds.append(("quoted.csv", b"\x01\xef\xbb\xbfa, \"b,c\" ,y\r\n1,\"2\"\"\",x\r\n\r\n3,4,z\n"))
    seeds.append(("regression.csv", b"\x05y,x1,x2\n1.5,+2,-3e2\n2.5,4,6\n"))
    seeds.append(("no-header.csv", b"\x02" + b"1,2,0\n3,4,1\n"))
    return seeds


def dictionaries():
    with open(os.path.join(ROOT, "web", "tests", "fixtures", "nodes.json"), encoding="utf-8") as f:
        nodes = json.load(f)
    with open(os.path.join(ROOT, "web", "tests", "fixtures", "layers.json"), encoding="utf-8") as f:
        layers = json.load(f)
    json_tokens = ['"{"', '"}"', '"["', '"]"', '":"', '","', '"null"', '"true"', '"false"', '"\\""', '"-1"',
                   '"1e308"', '"0.5"', '"18446744073709551615"', '"-9223372036854775808"']

    def words(values):
        return sorted({json.dumps('"%s"' % v) for v in values})

    graph_keys = ["name", "description", "nodes", "edges", "id", "type", "position", "data", "params",
                  "internalParams", "source", "target", "sourceHandle", "targetHandle", "trigger", "version",
                  "ports", "layers", "Input", "Output", "preset:Training Pipeline", "action", "execute", "stop",
                  "clear_cache", "graph_id", "run_id", "device", "example", "changed_nodes", "record_outputs",
                  "weights_persistent", "verbose", "input_shape", "cpu", "cuda:0", "auto"]
    node_words = [n["node_name"] for n in nodes] + [p["name"] for n in nodes for p in n["params"]] + \
                 [port["name"] for n in nodes for port in n["inputs"] + n["outputs"]]
    layer_words = [l["type"] for l in layers] + [p["name"] for l in layers for p in l["params"]]
    os.makedirs(DICTS, exist_ok=True)
    header = "# libFuzzer dictionary, written by fuzz/make_corpus.py from web/tests/fixtures/{nodes,layers}.json\n"
    with open(os.path.join(DICTS, "graph.dict"), "w", encoding="utf-8") as f:
        f.write(header + "\n".join(json_tokens + words(graph_keys + node_words + layer_words)) + "\n")
    with open(os.path.join(DICTS, "layers.dict"), "w", encoding="utf-8") as f:
        f.write(header + "\n".join(json_tokens + words(graph_keys + layer_words)) + "\n")


def main():
    write_seeds("graph", graph_seeds())
    write_seeds("ws_execute", ws_seeds())
    write_seeds("layers", [(name + ".json", compact({"layers": spec, "input_shape": shape}))
                           for name, spec, shape in layer_specs()])
    write_seeds("pickle", pickle_seeds())
    write_seeds("safetensors", safetensors_seeds())
    write_seeds("multipart", multipart_seeds())
    write_seeds("csv", csv_seeds())
    dictionaries()
    total = 0
    for target in sorted(os.listdir(CORPUS)):
        files = os.listdir(os.path.join(CORPUS, target))
        size = sum(os.path.getsize(os.path.join(CORPUS, target, f)) for f in files)
        total += size
        print("%-12s %3d seeds %7d bytes" % (target, len(files), size))
    print("total %d bytes" % total)


if __name__ == "__main__":
    main()
