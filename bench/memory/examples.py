"""bf16 against fp32 training peak of example graphs: each TrainingLoop set to the
precision and 3 optimizer updates, run with `codefy run --json` from the repository root.
Usage: python3 bench/memory/examples.py examples/forecast-tcn-transformer/graph.json ...
"""
import json, subprocess, sys, tempfile, os
def run(path, prec, steps=3):
    g = json.load(open(path))
    for n in g["nodes"]:
        if n["type"] == "TrainingLoop":
            p = n["data"]["params"]; p["precision"] = prec; p["max_steps"] = steps; p["epochs"] = 1
    d = tempfile.mkdtemp(); f = os.path.join(d, "g.json"); json.dump(g, open(f, "w"))
    out = subprocess.run(["build/codefy", "run", f, "--json", "--base-dir", os.path.dirname(os.path.abspath(path)), "--out", d], capture_output=True, text=True)
    for line in out.stdout.splitlines():
        e = json.loads(line)
        if e.get("event") == "execution_complete":
            for k, m in e["results"].items():
                if isinstance(m, dict) and "peak_memory_bytes" in m:
                    return m["peak_memory_bytes"]["cpu"] - m["start_memory_bytes"]["cpu"], m["precision"]
    print(out.stdout[-1500:], out.stderr[-1500:]); sys.exit(1)
for ex in sys.argv[1:]:
    a, pa = run(ex, "fp32"); b, pb = run(ex, "bf16")
    print("%s fp32 %.1f MiB (%s) bf16 %.1f MiB (%s) ratio %.3f" % (ex, a/2**20, pa, b/2**20, pb, b/a))
