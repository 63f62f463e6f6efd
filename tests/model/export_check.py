#!/usr/bin/env python3
"""Issue #31, checked from plain PyTorch (Debian's python3-torch), run by test_model.

For each folder the test wrote: import its model.py, load Codefy's weights.pt
into it with load_state_dict (strict: the names must be Codefy's), load
torchscript.pt with torch.jit.load, and compare both forwards (eval mode, no
gradients) with Codefy's outputs.

    /usr/bin/python3 tests/model/export_check.py TOLERANCE FOLDER...

A folder holds model.py, weights.pt (Codefy's state dict, as Codefy saves
it), torchscript.pt and cases.pt: {"input_<n>": tensor, "output_<n>":
Codefy's forward of it}. Prints a line per folder; exits 1 naming every
mismatch.
"""
import importlib.util
import sys

import torch


def check_folder(index, folder, tolerance):
    """The mismatches of one folder, and its largest difference."""
    failures = []
    spec = importlib.util.spec_from_file_location(f"codefy_export_{index}", f"{folder}/model.py")
    source = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(source)
    model = source.Model()
    weights = torch.load(f"{folder}/weights.pt")
    model.load_state_dict(weights)  # strict
    model.eval()
    scripted = torch.jit.load(f"{folder}/torchscript.pt")
    scripted.eval()
    if sorted(scripted.state_dict()) != sorted(weights):
        failures.append(f"{folder}: torchscript.pt's state_dict names {sorted(scripted.state_dict())} "
                        f"are not Codefy's {sorted(weights)}")
    cases = torch.load(f"{folder}/cases.pt")
    worst = 0.0
    with torch.no_grad():
        for key in sorted(k for k in cases if k.startswith("input_")):
            n = key[len("input_"):]
            x, want = cases[key], cases["output_" + n]
            for form, run in (("model.py", model), ("torchscript.pt", scripted)):
                got = run(x)
                if got.shape != want.shape:
                    failures.append(f"{folder}: {form} on input {n}: shape {list(got.shape)}, Codefy's "
                                    f"{list(want.shape)}")
                    continue
                diff = (got - want).abs().max().item() if want.numel() else 0.0
                worst = max(worst, diff)
                if not diff <= tolerance:
                    failures.append(f"{folder}: {form} on input {n}: differs from Codefy's by {diff:.3g} "
                                    f"(tolerance {tolerance:g})")
    return failures, worst


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    tolerance = float(argv[1])
    print(f"torch {torch.__version__}")
    failures = []
    for index, folder in enumerate(argv[2:]):
        folder_failures, worst = check_folder(index, folder, tolerance)
        failures += folder_failures
        print(f"{folder}: model.py and torchscript.pt, largest difference from Codefy {worst:.3g}")
    for failure in failures:
        print("MISMATCH " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
