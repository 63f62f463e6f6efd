"""Samples/s of MLP training at 1 and 2 intra-op threads (--threads forces
the count), for models from 700 to 670k weights, best of 4 interleaved runs each, in one
run: where a second thread starts to pay (device::kOneThreadBelowMultiplyAdds)."""
import json, subprocess, sys, os
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from graphlib import sequential_spec
def graph(hidden, feats, batch):
    layers=[("Linear",{"in_features":feats,"out_features":hidden}),("ReLU",{}),("Linear",{"in_features":hidden,"out_features":hidden}),("ReLU",{}),("Linear",{"in_features":hidden,"out_features":10})]
    nodes=[{"id":"start","type":"Start","data":{"params":{}}},
      {"id":"data","type":"ToyDataset","data":{"params":{"n_samples":4096,"n_features":feats,"n_classes":10,"seed":1}}},
      {"id":"loader","type":"DataLoader","data":{"params":{"batch_size":batch,"shuffle":True}}},
      {"id":"mlp","type":"SequentialModel","data":{"params":{"layers":sequential_spec(layers)}}},
      {"id":"loss","type":"Loss","data":{"params":{"type":"CrossEntropyLoss"}}},
      {"id":"opt","type":"Optimizer","data":{"params":{"type":"Adam","lr":0.001}}},
      {"id":"train","type":"TrainingLoop","data":{"params":{"epochs":3,"device":"cpu"}}}]
    e=lambda s,sh,t,th:{"source":s,"sourceHandle":sh,"target":t,"targetHandle":th,"type":"data"}
    edges=[{"source":"start","sourceHandle":"trigger","target":"mlp","type":"trigger"},e("data","dataset","loader","dataset"),
      e("mlp","model","opt","model"),e("mlp","model","train","model"),e("loader","dataloader","train","dataloader"),
      e("opt","optimizer","train","optimizer"),e("loss","loss_fn","train","loss_fn")]
    return {"name":"sweep","nodes":nodes,"edges":edges}
def sps(g, threads):
    open(GRAPH,"w").write(json.dumps(g))
    out=subprocess.run(["build/codefy","run",GRAPH,"--json","--threads",str(threads)],capture_output=True,text=True).stdout
    for line in out.splitlines():
        j=json.loads(line)
        if j.get("event")=="execution_complete":
            return j["results"]["train"]["samples_per_second"]
    raise SystemExit(out[-2000:])
GRAPH = os.path.join(os.environ.get("TMPDIR", "/tmp"), "codefy-threads-bench.json")
print("| features-hidden-hidden-10, batch | weights | multiply-adds per forward batch | 1 thread samples/s | 2 threads samples/s | 2 threads / 1 |")
print("| --- | --- | --- | --- | --- | --- |")
for feats,hidden,batch in [(16,16,32),(64,64,32),(128,128,64),(784,64,64),(784,128,64),(784,256,64),(784,512,128)]:
    g=graph(hidden,feats,batch)
    params=feats*hidden+hidden*hidden+hidden*10
    r=[]
    for rep in range(4):
        r.append((sps(g,1),sps(g,2)))
    s1=max(a for a,b in r); s2=max(b for a,b in r)
    print(f"| {feats}-{hidden}-{hidden}-10, {batch} | {params} | {params*batch:.2e} | {s1:.0f} | {s2:.0f} | {s2/s1:.2f} |", flush=True)
