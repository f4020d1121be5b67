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


def test_fresh_runs_again_only_the_selected_pairs(tmp_path):
    """--fresh with --only drops the old results of the selected (model, mode) pairs, never the
    rest of a results file (tier 3's file holds hours of runs)."""
    results = tmp_path / "tier3.jsonl"
    kept = [{"model": "repo/mha_key_padding", "mode": "eager", "status": "pass", "marker": "kept"},
            {"model": "repo/layernorm_mlp", "mode": "compile", "status": "pass", "marker": "other mode"}]
    stale = {"model": "repo/layernorm_mlp", "mode": "eager", "status": "pass", "marker": "stale"}
    results.write_text("".join(json.dumps(r) + "\n" for r in kept + [stale]))
    proc = subprocess.run([sys.executable, os.path.join(ZOO, "run_zoo.py"), "--tier", "3", "--fresh",
                           "--only", "^repo/layernorm_mlp$", "--modes", "eager", "--results", str(results)],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": os.path.join(ROOT, "python")})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    records = [json.loads(line) for line in results.read_text().splitlines()]
    assert records[:2] == kept
    assert [r.get("marker") for r in records[2:]] == [None], records
    assert records[2]["model"] == "repo/layernorm_mlp" and records[2]["mode"] == "eager"
    assert records[2]["status"] == "pass" and records[2]["cpu_losses"], records[2]
    # the worker's resident memory before the device steps and its peak during them
    assert 0 < records[2]["rss_before_mb"] <= records[2]["device_peak_rss_mb"], records[2]
    assert records[2]["device_peak_alloc_mb"] >= 0, records[2]  # a small model: may round to 0 MB


def test_a_report_reads_back_into_the_results_it_shows(tmp_path):
    """run_zoo.py --seed-from-report: the tier-3 table read back gives each cell's status, max
    difference (to the report's 2 digits), step1_only and the eager / compile columns."""
    sys.path.insert(0, ZOO)
    import run_zoo
    from report_records import records_from_report
    recs = [
        {"model": "hf/a/x", "mode": "eager", "status": "pass", "max_rel": 0.0, "device_s": 0.25,
         "host_fallback_ops": ["aten::nonzero", "torchvision::nms"]},
        {"model": "hf/a/x", "mode": "compile", "status": "pass", "max_rel": 3.14e-4, "compiled_share": 0.93,
         "rss_before_mb": 1200, "device_peak_rss_mb": 3100, "device_peak_alloc_mb": 1500},
        {"model": "hf/a/x", "mode": "adaptive", "status": "pass", "max_rel": 0.0123, "step1_only": True,
         "compiled_share": 0.41, "adaptive_waited": True},
        {"model": "timm/b", "mode": "adaptive", "status": "pass", "max_rel": 0.0},
        {"model": "tv/c", "mode": "eager", "status": "pass", "max_rel": 0.04, "cpu_vs_f64": 0.01},
        {"model": "tv/c", "mode": "compile", "status": "pass", "max_rel": 0.03, "judged_without_f64": True},
        {"model": "timm/b", "mode": "eager", "status": "xfail", "max_rel": 0.5, "reason": "a | piped reason"},
        {"model": "timm/b", "mode": "compile", "status": "error", "error": "RuntimeError: boom"},
    ]
    path = tmp_path / "report.md"
    run_zoo.write_report(str(path), [dict(r) for r in recs], {}, 3, 2)
    back = {(r["model"], r["mode"]): r for r in records_from_report(str(path), "R")}
    assert set(back) == {(r["model"], r["mode"]) for r in recs}
    for r in recs:
        b = back[(r["model"], r["mode"])]
        assert b["from_report"] == "R"
        assert b["status"] == ("fail" if r["status"] == "xfail" else r["status"])
        if "max_rel" in r:
            assert abs(b["max_rel"] - r["max_rel"]) <= 0.05 * r["max_rel"]
        assert b.get("step1_only", False) == r.get("step1_only", False)
        assert b.get("adaptive_waited", False) == r.get("adaptive_waited", False)
        assert b.get("judged_by") == run_zoo.judged_by(r)
    assert back[("hf/a/x", "eager")]["device_s"] == 0.25
    assert back[("hf/a/x", "eager")]["host_fallback_ops"] == ["aten::nonzero", "torchvision::nms"]
    assert back[("hf/a/x", "compile")]["compiled_share"] == 0.93
    assert back[("hf/a/x", "adaptive")]["compiled_share"] == 0.41
    assert (back[("hf/a/x", "compile")]["rss_before_mb"], back[("hf/a/x", "compile")]["device_peak_rss_mb"]) \
        == (1200, 3100)
    assert back[("hf/a/x", "compile")]["device_peak_alloc_mb"] == 1500
    assert "device_peak_rss_mb" not in back[("hf/a/x", "eager")]
    # a report made before the adaptive column still reads back
    old_path = tmp_path / "old_report.md"
    old_path.write_text(
        "| model | features | eager | compile | adaptive | eager s | host-fallback ops | compiled share |\n"
        "|---|---|---|---|---|---|---|---|\n"
        "| hf/afmoe/causal-lm | act:silu, norm:rms | pass (0e+00) | pass (1e-07) | pass (0e+00) | 0.094 | nonzero "
        "| 0.9304 |\n")
    old = {(r["model"], r["mode"]): r for r in records_from_report(str(old_path), "O")}
    assert old[("hf/afmoe/causal-lm", "compile")]["compiled_share"] == 0.9304
    assert old[("hf/afmoe/causal-lm", "eager")]["host_fallback_ops"] == ["aten::nonzero"]
    assert "adaptive_waited" not in old[("hf/afmoe/causal-lm", "adaptive")]
    # the float64 check's passes are counted again after a read-back (they were lost before)
    assert back[("tv/c", "eager")]["judged_by"] == "float64"
    assert back[("tv/c", "compile")]["judged_by"] == "f32 samples"
    again = tmp_path / "again.md"
    run_zoo.write_report(str(again), list(back.values()), {}, 3, 3)
    assert "1 were outside rtol and passed by the float64 check" in again.read_text()
    assert "1 by CPU float32 noise samples alone" in again.read_text()
    # a report from before the "by ..." marks: a pass beyond the default rtol passed by one of the two
    older = tmp_path / "older.md"
    older.write_text(
        "| model | features | eager | compile | adaptive | eager s | host-fallback ops | compiled share |\n"
        "|---|---|---|---|---|---|---|---|\n"
        "| tv/d | conv:2d | pass (2.0e-02) | pass (9.0e-04) | — | 1.5 |  | 0.9 |\n")
    od = {(r["model"], r["mode"]): r for r in records_from_report(str(older), "O")}
    assert od[("tv/d", "eager")]["judged_by"] == "beyond rtol"
    assert "judged_by" not in od[("tv/d", "compile")]
    assert "a | piped reason" in back[("timm/b", "eager")]["error"]
    assert back[("timm/b", "compile")]["error"] == "RuntimeError: boom"
