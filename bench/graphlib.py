"""Helpers the benchmark drivers share: graphs in the editor's format."""
import json


def sequential_spec(layers):
    """A chain of (type, params) layers as a SequentialModel v2 spec (JSON text)."""
    nodes = [{"id": "in", "type": "Input", "ports": [{"id": "p_x", "name": "x"}]}]
    edges, prev = [], "in"
    for i, (t, p) in enumerate(layers):
        nodes.append({"id": "l%d" % i, "type": t, "params": p})
        edges.append({"id": "e%d" % i, "source": prev, "target": "l%d" % i})
        prev = "l%d" % i
    edges[0]["sourceHandle"] = "p_x"
    nodes.append({"id": "out", "type": "Output", "ports": [{"id": "p_y", "name": "y"}]})
    edges.append({"id": "e_out", "source": prev, "target": "out", "targetHandle": "p_y"})
    return json.dumps({"version": 2, "nodes": nodes, "edges": edges})
