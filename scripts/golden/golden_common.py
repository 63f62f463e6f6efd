"""What the golden-value scripts share: the repository root and the JSON
form of a tensor that tests/engine/golden_support.h reads."""
import math
import os

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

DTYPE_NAMES = {torch.float32: "float32", torch.float64: "float64", torch.int64: "int64",
               torch.int32: "int32", torch.bool: "bool"}


def tensor_json(t):
    """{shape, dtype, values}; JSON has no infinities, so they are written "inf", "-inf", "nan"."""
    t = t.detach()
    values = t.flatten().tolist()
    if t.dtype == torch.bool:
        values = [int(v) for v in values]
    elif t.is_floating_point():
        values = [v if math.isfinite(v) else ("-inf" if v < 0 else "inf" if v > 0 else "nan") for v in values]
    return {"shape": list(t.shape), "dtype": DTYPE_NAMES[t.dtype], "values": values}
