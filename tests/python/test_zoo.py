"""The model zoo's machinery (tests/zoo, issue 7): registry, features from the recorded stream,
the representative set. The tier runs themselves are tests/zoo/run_zoo.py.

- the registry loads every family without building a model, with unique names;
- feature rules on in-repo models whose architecture is known: each expected feature is derived
  from the traced stream (depthwise/dilated/transposed/1-D/3-D convolutions, causal, cross and
  grouped-query attention, embedding lookups and bags, group, instance and RMS norms, tanh RNN,
  LSTM and GRU);
- the greedy cover picks the fewest models on a hand-made case and covers everything;
- tests/zoo/representative.json is what tests/zoo/cover.py computes from features.json.
"""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ZOO = os.path.join(ROOT, "tests", "zoo")
sys.path.insert(0, ZOO)

import cover  # noqa: E402


def test_registry_names_are_unique_and_lazy():
    proc = subprocess.run([sys.executable, "-c", (
        "import sys, time; sys.path.insert(0, %r); t = time.time(); import registry; m = registry.all_models(); "
        "import json; print(json.dumps({'n': len(m), 'families': sorted({z.family for z in m.values()}), "
        "'unbuildable': len(registry.unbuildable()), 's': time.time() - t}))") % ZOO],
        capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": os.path.join(ROOT, "python")})
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["n"] > 100 and {"repo", "timm", "torchvision"} <= set(out["families"]), out
    assert out["s"] < 60, f"loading the registry took {out['s']:.0f}s (it must not build models)"


EXPECTED = {
    "repo/depthwise_separable": {"conv:depthwise", "conv:2d"},
    "repo/dilated_conv2d": {"conv:dilated"},
    "repo/convtranspose_autoencoder": {"conv:transposed"},
    "repo/conv1d_audio": {"conv:1d", "norm:batch", "input:audio"},
    "repo/conv3d_video": {"conv:3d", "input:video"},
    "repo/transformer_causal_lm": {"attention:causal", "embedding:lookup", "norm:layer"},
    "repo/transformer_seq2seq": {"attention:cross", "output:sequence"},
    "repo/gqa_decoder_lm": {"attention:grouped-query", "attention:causal", "norm:rms", "act:silu"},
    "repo/embedding_bag": {"embedding:bag"},
    "repo/groupnorm_cnn": {"norm:group", "act:silu"},
    "repo/instancenorm_style": {"norm:instance"},
    "repo/rnn_tanh_regressor": {"recurrence:rnn"},
    "repo/lstm_lm": {"recurrence:lstm"},
    "repo/gru_bidir_tagger": {"recurrence:gru"},
}


def test_features_from_the_recorded_stream(tmp_path):
    out = tmp_path / "features.json"
    only = "^(" + "|".join(n.replace("/", "/") for n in EXPECTED) + ")$"
    proc = subprocess.run([sys.executable, os.path.join(ZOO, "features.py"), "--only", only, "--out", str(out)],
                          capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PYTHONPATH": os.path.join(ROOT, "python")})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    data = json.loads(out.read_text())
    assert not data["failed"], data["failed"]
    for name, want in EXPECTED.items():
        got = set(data["models"][name]["features"])
        assert want <= got, f"{name}: missing {sorted(want - got)} (derived: {sorted(got)})"
    # No attention in a CNN, no recurrence in a transformer.
    assert not any(f.startswith("attention:") for f in data["models"]["repo/conv3d_video"]["features"])
    assert not any(f.startswith("recurrence:") for f in data["models"]["repo/transformer_causal_lm"]["features"])


def test_greedy_cover_takes_the_fewest_models():
    features = {"models": {
        "a": {"features": ["x:1", "x:2"], "ops": ["aten::mm"], "recorded": 5},
        "b": {"features": ["x:3"], "ops": ["aten::add"], "recorded": 1},
        "c": {"features": ["x:1", "x:2", "x:3"], "ops": ["aten::mm", "aten::add"], "recorded": 9},
        "d": {"features": ["x:4"], "ops": [], "recorded": 1},
    }}
    rep = cover.compute(features, {"d": False})
    assert rep["models"] == ["c", "d"] and rep["models_slow"] == ["d"]
    assert rep["features"] == 4 and rep["ops"] == 2
    assert rep["covers"]["x:3"] == "c" and rep["covers"]["x:4"] == "d"


def test_greedy_cover_weighs_the_cost_of_each_model():
    # "big" covers everything alone, but at 50x the recorded ops of the two small models
    # together; each small one brings more elements per op.
    over = cover.MODEL_OVERHEAD_OPS
    features = {"models": {
        "big": {"features": ["x:1", "x:2", "x:3"], "ops": ["aten::mm"], "recorded": 100 * over},
        "s1": {"features": ["x:1", "x:2"], "ops": ["aten::mm"], "recorded": over},
        "s2": {"features": ["x:3"], "ops": [], "recorded": over},
    }}
    rep = cover.compute(features)
    assert rep["models"] == ["s1", "s2"], rep["models"]
    # Without s2, only the big model covers x:3: the cover still completes, with it last.
    del features["models"]["s2"]
    assert cover.compute(features)["models"] == ["s1", "big"]


def test_representative_set_is_current():
    proc = subprocess.run([sys.executable, os.path.join(ZOO, "cover.py"), "--check"], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_tier2_representative_models_train_like_cpu(tmp_path):
    """Tier 2: every model of representative.json, 2 AdamW steps in eager, compile and adaptive
    mode vs CPU (tests/zoo/run_zoo.py); known failures in tests/zoo/expected_failures.txt."""
    summary = tmp_path / "summary.json"
    proc = subprocess.run([sys.executable, os.path.join(ZOO, "run_zoo.py"), "--tier", "2", "--fresh",
                           "--results", str(tmp_path / "tier2.jsonl"), "--summary", str(summary)],
                          capture_output=True, text=True, timeout=1800,
                          env={**os.environ, "PYTHONPATH": os.path.join(ROOT, "python")})
    print(proc.stdout[-4000:])
    assert summary.exists(), proc.stderr[-3000:]
    s = json.loads(summary.read_text())
    assert not s["unexpected"], "\n".join(f"{m} [{mode}]: {err}" for m, mode, err in s["unexpected"])
    assert not s["xpass"], f"expected failures that pass now: {s['xpass']}"
    with open(os.path.join(ZOO, "representative.json")) as f:
        n = len(json.load(f)["models"])
    for mode in ("eager", "compile", "adaptive"):
        assert s["counts"][mode].get("pass", 0) + s["counts"][mode].get("xfail", 0) == n, s["counts"]
