"""Helpers shared by the Python tests."""
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Where the torch_trn package is imported from: the sources (with the default build's _C), or a
# sanitizer build's package (./dev test --sanitize=..., tests/sanitizers/run_pytest.sh).
PACKAGE_PARENT = os.environ.get("TRN_TEST_PACKAGE_PARENT", os.path.join(ROOT, "python"))


def line_of(path, marker):
    """The line number of the line in `path` carrying `marker` (a `# MARK-...` comment)."""
    with open(path) as f:
        for i, text in enumerate(f, 1):
            if marker in text and "line_of(" not in text:
                return i
    raise AssertionError(f"{marker} not found in {path}")


def run_python(code, env=None, drop=()):
    """Runs `code` in a fresh python3 with torch_trn importable; returns the CompletedProcess."""
    full_env = {k: v for k, v in os.environ.items() if k not in drop}
    full_env.update(env or {})
    full_env["PYTHONPATH"] = PACKAGE_PARENT
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full_env,
                          capture_output=True, text=True, timeout=300)


def last_json(proc):
    """The last JSON line a test program printed (after asserting it exited 0)."""
    import json
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr[-4000:]}"
    lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
    assert lines, f"no JSON line in the output:\n{proc.stdout}\n{proc.stderr[-2000:]}"
    return json.loads(lines[-1])


def cpu_losses(name, steps, optim="adamw"):
    """Losses of `steps` training steps of models.py's `name` in PyTorch CPU eager (the reference
    the device runs are compared with): AdamW(lr=1e-2, weight_decay=0.01) or SGD(lr=1e-2)."""
    import torch
    from models import make_batches, make_model
    model = make_model(name)
    opt = (torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01) if optim == "adamw"
           else torch.optim.SGD(model.parameters(), lr=1e-2))
    out = []
    for x, y in make_batches(name, steps):
        loss = model.loss(x, y)
        loss.backward(); opt.step(); opt.zero_grad()
        out.append(loss.item())
    return out


def assert_losses_match(what, got, want, rtol=1e-5, labels=None):
    """Each step's loss on the device `got` equals PyTorch CPU's `want` to `rtol` (relative), and
    there are as many; `what` names the run and `labels[i]`, when given, step i (e.g. its phase)."""
    import math
    assert len(got) == len(want), (what, got, want)
    for i, (a, b) in enumerate(zip(got, want)):
        at = f" ({labels[i]})" if labels else ""
        assert math.isclose(a, b, rel_tol=rtol), f"{what}: step {i}{at} loss neuron={a!r} cpu={b!r}"


# Damage to a disk-cache entry (the entry header, src/runtime/cache/entry_format.h: u32 header
# size at byte 12, u64 payload size at byte 16).
def flip_entry_payload_byte(path):
    """Inverts one byte in the middle of the entry's payload (its hash no longer matches)."""
    import struct
    with open(path, "r+b") as f:
        header_size, payload = struct.unpack_from("<IQ", f.read(24), 12)
        where = header_size + payload // 2
        f.seek(where)
        b = f.read(1)[0]
        f.seek(where)
        f.write(bytes([b ^ 0xFF]))


def truncate_entry(path):
    """Cuts the entry file in half."""
    import os
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.truncate(size // 2)


# The environment of the trn target tests: the modeled NeuronCore (trn2), compile mode.
TRN = {"NEURON_TARGET": "trn2", "NEURON_MODE": "compile"}


def ran_on_core(dev):
    """The ATen ops (overload names dropped) that ran on the modeled core: stats()["device"]."""
    return {name.split(".")[0] for name in dev["ops_by_name"]}


TRAIN_ON_TRN = """
import copy, json, torch, torch_trn
from torch import nn
torch.manual_seed(0)
model = {model}
x, y = {inputs}
def train(m, dev):
    m = m.to(dev)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
    losses = []
    for _ in range(2):
        loss = nn.functional.cross_entropy(m(x.to(dev)), y.to(dev))
        loss.backward(); opt.step(); opt.zero_grad()
        losses.append(loss.item())
    return losses
dev_model = copy.deepcopy(model)
torch_trn.reset_stats()
got = train(dev_model, "neuron")
torch_trn.wait_for_compiles()
s = torch_trn.stats()
print(json.dumps({{"got": got, "ref": train(model, "cpu"), "dev": s["device"], "unlowered": s["unlowered_ops"]}}))
"""


def train_on_trn2(model, inputs):
    """Two AdamW steps with cross entropy of `model` (an expression, `nn` imported) on the inputs
    `inputs` (an expression for (x, y)) on the modeled core (TRN) and on the CPU from the same
    weights: {"got": losses, "ref": CPU losses, "dev": stats()["device"], "unlowered": ...}."""
    return last_json(run_python(TRAIN_ON_TRN.format(model=model, inputs=inputs), env=TRN))


def assert_convolutions_wholly_on_core(out):
    """`out`: {"diffs": {case: [relative differences vs CPU]}, "dev": stats()["device"]} of a
    program of convolutions on trn2: every case within 1e-5, forward and backward convolutions
    ran on the core, nothing on the host, TensorE and VectorE busy."""
    for name, d in out["diffs"].items():
        assert max(d) < 1e-5, f"{name}: relative differences vs CPU {d}"
    dev = out["dev"]
    ran = ran_on_core(dev)
    assert {"aten::convolution", "aten::convolution_backward"} <= ran, sorted(ran)
    assert dev["host_group_reasons"] == {}, dev["host_group_reasons"]
    assert dev["ops_on_host"] == 0, dev
    assert dev["engine_busy_ns"]["tensor"] > 0 and dev["engine_busy_ns"]["vector"] > 0
