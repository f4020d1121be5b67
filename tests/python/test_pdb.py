"""Debugging in adaptive mode: pdb stepping through a training loop, and errors raised inside
compiled groups.

  - pdb_model_script.py runs under ``python3 -m pdb`` fed one fixed command sequence through
    stdin (a conditional breakpoint inside the loop, step into the loss function, next, p of
    intermediate tensors, weights, gradients and inputs, continue to the end). It runs twice:
    on the neuron device with NEURON_MODE=adaptive and on the CPU. Every value printed by a
    ``p`` command, every line pdb stopped at and every step's loss must agree (1e-5 relative),
    both runs must finish, and the neuron run must have run ops compiled before and after the
    breakpoint step.
  - A device-side check firing inside a compiled group (nll_loss with an out-of-range target)
    raises IndexError at the next sync, naming the op's file and line; the profile shows the
    failing step ran as a compiled group.
"""
import ast
import json
import math
import os
import re
import subprocess
import sys

from helpers import ROOT, line_of

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "pdb_model_script.py")
ADAPTIVE = {"NEURON_MODE": "adaptive"}
STEPS, BREAK_STEP = 8, 4
RTOL = 1e-5
PROMPT = "(Pdb) "
START = r"(?:^|^\(Pdb\) )"  # a line the script printed (maybe after a prompt: no newline)


def pdb_commands():
    """The pdb session: (command, what its output is) pairs. kind "p" outputs are compared."""
    brk = line_of(SCRIPT, "MARK-BREAK")
    return [
        (f"b {brk}, it == {BREAK_STEP}", "break"),
        ("c", "stop"),                                # at MARK-BREAK in step BREAK_STEP
        ("s", "stop"),                                # --Call-- compute_loss
        ("n", "stop"),                                # h = model.fc1(x)
        ("n", "stop"),                                # a = torch.relu(h)
        ("p float(h.sum())", "p"),
        ("p h[1, :4].tolist()", "p"),
        ("n", "stop"),                                # logits = ...
        ("p float(a.sum())", "p"),
        ("n", "stop"),                                # loss = ...
        ("p logits[0].tolist()", "p"),
        ("n", "stop"),                                # return loss
        ("p float(loss)", "p"),
        ("p x[0, :3].tolist()", "p"),
        ("p float(model.fc1.weight.sum())", "p"),
        ("n", "stop"),                                # --Return--
        ("n", "stop"),                                # opt.zero_grad()
        ("n", "stop"),                                # loss.backward()
        ("n", "stop"),                                # opt.step()
        ("p float(model.fc1.weight.grad.abs().sum())", "p"),
        ("p float(model.fc2.bias.grad.abs().sum())", "p"),
        ("n", "stop"),                                # print("LOSS", ...)
        ("p float(model.fc1.weight.sum())", "p"),     # after the SGD step
        ("p float(model.fc2.weight.abs().sum())", "p"),
        ("cl 1", "clear"),
        ("c", "run"),                                 # to the end: pdb restarts the program
        ("q", "quit"),
    ]


def run_under_pdb(device, env):
    cmds = pdb_commands()
    full_env = dict(os.environ)
    full_env.update(env)
    full_env.update({"PYTHONPATH": os.path.join(ROOT, "python"), "PDB_DEVICE": device,
                     "PDB_STEPS": str(STEPS), "PDB_BREAK_STEP": str(BREAK_STEP)})
    proc = subprocess.run([sys.executable, "-m", "pdb", SCRIPT], cwd=HERE, env=full_env,
                          input="".join(c + "\n" for c, _ in cmds), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, f"[{device}] exit {proc.returncode}\n{proc.stdout}\n{proc.stderr[-4000:]}"
    # stdin is not a tty, so pdb does not echo commands: the output after the k-th prompt is the
    # answer to the k-th command (chunk 0 is what came before the first prompt).
    chunks = proc.stdout.split(PROMPT)
    assert len(chunks) == len(cmds) + 1, \
        f"[{device}] {len(chunks) - 1} prompts for {len(cmds)} commands:\n{proc.stdout}\n{proc.stderr[-2000:]}"
    return cmds, chunks[1:], proc


def parse_session(device, env):
    cmds, answers, proc = run_under_pdb(device, env)
    values, stops = [], []
    for (cmd, kind), out in zip(cmds, answers):
        out = out.strip()
        if kind == "p":
            try:
                v = ast.literal_eval(out)
            except (ValueError, SyntaxError):
                raise AssertionError(f"[{device}] `{cmd}` printed {out!r}, not a value\n{proc.stderr[-2000:]}")
            values.append((cmd, v))
        elif kind == "stop":
            where = re.findall(r"^> .*\((\d+)\)(<?\w+>?)\(\)", out, re.M)
            assert where, f"[{device}] `{cmd}` did not stop anywhere: {out!r}"
            stops.append((cmd, where[-1]))
    out = proc.stdout
    losses = {int(m.group(1)): float(m.group(2)) for m in re.finditer(START + r"LOSS (\d+) (\S+)$", out, re.M)}
    assert sorted(losses) == list(range(STEPS)), f"[{device}] losses printed: {losses}\n{out}"
    assert re.search(START + r"done$", out, re.M), f"[{device}] the script did not finish:\n{out}"
    assert "The program finished" in out, out
    compiled = re.search(START + r"COMPILED (\d+) (\d+)$", out, re.M)
    return {"values": values, "stops": stops, "losses": losses,
            "compiled": tuple(map(int, compiled.groups())) if compiled else None, "stdout": out}


def flat(v):
    return [float(e) for e in v] if isinstance(v, list) else [float(v)]


def test_pdb_session_on_neuron_adaptive_matches_cpu():
    dev = parse_session("neuron", ADAPTIVE)
    cpu = parse_session("cpu", {})
    n_p = sum(kind == "p" for _, kind in pdb_commands())
    assert n_p > 0 and len(dev["values"]) == len(cpu["values"]) == n_p
    # The same places in the same order: the breakpoint, compute_loss's lines, the loop body.
    assert dev["stops"] == cpu["stops"]
    brk, h_line = line_of(SCRIPT, "MARK-BREAK"), line_of(SCRIPT, "MARK-H")
    assert dev["stops"][0][1] == (str(brk), "<module>")
    assert (str(h_line), "compute_loss") in [w for _, w in dev["stops"]]
    for (cmd, a), (_, b) in zip(dev["values"], cpu["values"]):
        fa, fb = flat(a), flat(b)
        assert len(fa) == len(fb), f"`{cmd}`: neuron {a!r} vs cpu {b!r}"
        for x, y in zip(fa, fb):
            assert math.isclose(x, y, rel_tol=RTOL), f"`{cmd}`: neuron {a!r} vs cpu {b!r}"
    for step in range(STEPS):
        a, b = dev["losses"][step], cpu["losses"][step]
        assert math.isclose(a, b, rel_tol=RTOL), f"step {step} loss: neuron {a!r} vs cpu {b!r}"
    # Compiled code ran during the warm-up steps and again after the breakpoint step.
    assert dev["compiled"] is not None, dev["stdout"]
    before, end = dev["compiled"]
    assert before > 0, f"no op ran compiled before the breakpoint step: {dev['compiled']}"
    assert end > before, f"no op ran compiled after the breakpoint: {dev['compiled']}"
    assert cpu["compiled"] is None


NLL_SCRIPT = '''\
import json, sys, torch, torch_trn
import torch.nn.functional as F

torch.manual_seed(0)
x = torch.randn(4, 5).to("neuron")
good = torch.tensor([1, 4, 0, 2]).to("neuron")
bad = torch.tensor([1, 1000, 0, 2]).to("neuron")      # 1000 is not a class of 5
torch_trn.sync()


def step(t):
    loss = F.nll_loss(x.log_softmax(1), t)  # MARK-NLL
    return loss.item()


good_losses = []
for i in range(3):
    good_losses.append(step(good))
    torch_trn.wait_for_compiles()
warm = torch_trn.stats()["ops_run_compiled"]
caught = None
try:
    with torch_trn.profile(sys.argv[1]):
        step(bad)
except Exception as e:
    caught = [type(e).__name__, str(e)]
execs = [e["args"] for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("cat") == "execute"]
print(json.dumps({"good": good_losses, "warm": warm, "caught": caught, "execs": execs,
                  "after": step(good)}))
'''


def test_error_in_compiled_group_names_the_ops_line(tmp_path):
    script = tmp_path / "nll_adaptive.py"
    script.write_text(NLL_SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), **ADAPTIVE)
    proc = subprocess.run([sys.executable, str(script), str(tmp_path / "bad_step.json")], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr[-4000:]}"
    lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
    assert lines, proc.stdout + proc.stderr[-2000:]
    out = json.loads(lines[-1])

    import torch
    import torch.nn.functional as F
    torch.manual_seed(0)
    x = torch.randn(4, 5)
    ref = F.nll_loss(x.log_softmax(1), torch.tensor([1, 4, 0, 2])).item()
    assert all(math.isclose(v, ref, rel_tol=RTOL) for v in out["good"]), (out["good"], ref)
    assert out["warm"] > 0, f"nothing ran compiled in the warm-up steps: {out}"

    assert out["caught"] is not None, f"the out-of-range target raised nothing: {out}"
    kind, msg = out["caught"]
    nll_line = line_of(str(script), "MARK-NLL")
    assert kind == "IndexError", out["caught"]
    assert "aten::nll_loss_forward" in msg, msg
    assert f"{script}:{nll_line}" in msg, f"the error does not name {script.name}:{nll_line}: {msg}"
    assert "out of bounds" in msg, msg
    # The failing step ran as one compiled group (the device-side check fired), not op by op.
    assert out["execs"], out
    assert all(e["kind"] == "compiled" for e in out["execs"]), out["execs"]
    assert any(f"{script}:{nll_line}" in l for e in out["execs"] for l in e.get("lines", [])), out["execs"]
    # The device keeps working after the error.
    assert math.isclose(out["after"], ref, rel_tol=RTOL), (out["after"], ref)
