"""NEURON_SHAPE_VARIANTS: a group whose shapes change at every step (the attention of each new
token in generate()) is compiled in a bounded number of shapes; later shapes run op by op.

What is proven (compile mode, fresh processes):
  - greedy generate() of a tiny Llama (random weights from a config) gives CPU's tokens, and 24
    more new tokens cost fewer than 6 more compiles (measured: 59 for 24 tokens, 63 for 48; the
    few extra come from groups whose cut points move with the length, each a new sequence);
  - without the bound (NEURON_SHAPE_VARIANTS=0) each new length compiles again: the bound is what
    keeps the count flat;
  - the refused variants are counted in stats()["shape_variants_refused"] and never reported as
    compile failures.
"""
import pytest

from helpers import last_json, run_python

GENERATE = """
import json, torch, torch_trn
from transformers import LlamaConfig, LlamaForCausalLM
torch.manual_seed(0)
cfg = LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
model = LlamaForCausalLM(cfg).eval()
prompt = torch.randint(0, 128, (1, 6))
out = {{}}
with torch.no_grad():
    want = model.generate(prompt, max_new_tokens={n}, do_sample=False).tolist()
    dev = model.to("neuron")
    got = dev.generate(prompt.to("neuron"), max_new_tokens={n}, do_sample=False).cpu().tolist()
s = torch_trn.stats()
print(json.dumps({{"same": got == want, "compiles": s["compiles"], "refused": s["shape_variants_refused"],
                  "failures": s["compile_failures"]}}))
"""


def generate(n, **env):
    return last_json(run_python(GENERATE.format(n=n), env={"NEURON_MODE": "compile", "NEURON_CACHE_DIR": "off", **env}))


@pytest.fixture(scope="module")
def short():
    return generate(24)   # shared: each generate run takes ~30 s on this machine


def test_generate_compiles_a_bounded_number_of_shapes(short):
    long = generate(48)
    assert short["same"] and long["same"], (short, long)
    assert long["compiles"] - short["compiles"] < 24 / 4, (short, long)
    assert long["refused"] > short["refused"] > 0, (short, long)
    assert not long["failures"], long["failures"]


def test_without_the_bound_every_length_compiles(short):
    bounded, unbounded = short, generate(24, NEURON_SHAPE_VARIANTS="0")
    assert unbounded["same"], unbounded
    assert unbounded["refused"] == 0
    assert unbounded["compiles"] >= bounded["compiles"] + 24 - 8, (bounded, unbounded)


OPTIMIZER = """
import json, torch, torch_trn
torch.manual_seed(0)
cpu = [torch.nn.Parameter(torch.randn(k, 3)) for k in range(1, 121)]   # 120 shapes
dev = [torch.nn.Parameter(p.detach().clone().to("neuron")) for p in cpu]
def train(params):
    opt = torch.optim.AdamW(params, lr=1e-2, foreach=False)   # one update per parameter
    for step in range(2):
        loss = sum((p * p).sum() for p in params); loss.backward(); opt.step(); opt.zero_grad()
    return [p.detach().cpu() for p in params]
torch_trn.reset_stats()
got, want = train(dev), train(cpu)
torch_trn.wait_for_compiles()
s = torch_trn.stats()
print(json.dumps({"refused": s["shape_variants_refused"], "off": s["device"]["ops_on_host"],
                  "same": all(torch.allclose(a, b, rtol=1e-5, atol=1e-6) for a, b in zip(got, want))}))
"""


def test_trn_targets_compile_every_shape_of_an_optimizer_step():
    # AdamW's per-parameter updates are the same ops from one line (the user's opt.step()) in
    # one shape per parameter. On a trn target (trn compiles take milliseconds, and a variant run
    # op by op leaves the NeuronCore) the default is no bound: every update runs on the core.
    # With the host's bound of 8 set explicitly, variants are refused and run on the host (what
    # made convnextv2_atto's second step run 195 ops off the core).
    # Groups of at most 16 ops, so the step has many groups of the same ops and lines in
    # different shapes whatever the entry point's argument limit (with up to 114 writes a group,
    # the default cuts gave no group more than 8 shapes here).
    trn = {"NEURON_TARGET": "trn2", "NEURON_MODE": "compile", "NEURON_MAX_GROUP_OPS": "16"}
    default = last_json(run_python(OPTIMIZER, env=trn, drop=("NEURON_SHAPE_VARIANTS",)))
    bounded = last_json(run_python(OPTIMIZER, env=dict(trn, NEURON_SHAPE_VARIANTS="8")))
    assert default["same"] and bounded["same"], (default, bounded)
    assert default["refused"] == 0 and default["off"] == 0, default
    assert bounded["refused"] > 0 and bounded["off"] > 0, bounded
