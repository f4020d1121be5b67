"""The layering rules of src/ (docs/architecture.md "Layers"), checked over the #includes by
tools/check_layers.py: the tree has no violation beyond the listed ones, every listed one still
occurs, and the checker catches each kind of violation (on small trees written here)."""
import importlib.util
import os

import pytest

from helpers import ROOT

_spec = importlib.util.spec_from_file_location("check_layers", os.path.join(ROOT, "tools", "check_layers.py"))
check_layers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_layers)


def test_the_tree_keeps_the_layering_rules():
    new, stale, _ = check_layers.check()
    assert not new, "new layering violations (fix them, or list them with a reason in " \
                    "tools/layering_expectations.txt):\n" + "\n".join(new)
    assert not stale, "listed violations that are gone (remove their lines from " \
                      "tools/layering_expectations.txt):\n" + "\n".join(stale)


def test_every_src_folder_has_a_layer():
    for name in sorted(os.listdir(os.path.join(ROOT, "src"))):
        if os.path.isdir(os.path.join(ROOT, "src", name)):
            assert check_layers.layer_of(name) is not None, f"src/{name} has no layer in tools/check_layers.py"


def write_tree(root, files):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def found(tmp_path, files):
    write_tree(tmp_path, files)
    return check_layers.violations(check_layers.scan(str(tmp_path)))


def test_a_clean_tree_passes(tmp_path):
    assert found(tmp_path, {
        "src/trace/a.cpp": '#include "scheduler/s.h"\n#include "runtime/r.h"\n#include <ATen/Tensor.h>\n',
        "src/scheduler/s.h": '#include "mlir_lowering/group_lowering.h"\n',
        "src/mlir_lowering/group_lowering.h": '#include <ATen/Tensor.h>\n#include "runtime/r.h"\n',
        "src/mlir_lowering/trn/TrnEmit.cpp": '#include "mlir/IR/Builders.h"\n#include "base/knobs.h"\n',
        "src/runtime/r.h": '#include "base/knobs.h"\n#include <c10/core/Device.h>\n',
        "src/base/knobs.h": '#include "absl/status/status.h"\n#include <string>\n',
    }) == {}


def test_an_upward_include_is_a_violation(tmp_path):
    got = found(tmp_path, {
        "src/runtime/executor.h": '#include "mlir_lowering/group_lowering.h"\n',
        "src/mlir_lowering/group_lowering.h": "",
    })
    assert set(got) == {("layer", "runtime/executor.h", "mlir_lowering/group_lowering.h")}
    assert "a higher layer" in got[("layer", "runtime/executor.h", "mlir_lowering/group_lowering.h")]


def test_mlir_outside_the_compiler_is_a_violation(tmp_path):
    got = found(tmp_path, {"src/scheduler/grouper.cpp": '#include "mlir/IR/MLIRContext.h"\n'})
    assert set(got) == {("mlir", "scheduler/grouper.cpp", "mlir/IR/MLIRContext.h")}


def test_mlir_reached_through_a_lowering_header_is_a_violation(tmp_path):
    got = found(tmp_path, {
        "src/scheduler/stream.cpp": '#include "mlir_lowering/host_jit.h"\n',
        "src/mlir_lowering/host_jit.h": '#include "mlir/IR/BuiltinOps.h"\n',
    })
    assert set(got) == {("mlir", "scheduler/stream.cpp", "mlir/IR/BuiltinOps.h")}
    assert "via mlir_lowering/host_jit.h" in got[("mlir", "scheduler/stream.cpp", "mlir/IR/BuiltinOps.h")]


def test_torch_reached_by_the_compiler_through_a_header_is_a_violation(tmp_path):
    got = found(tmp_path, {
        "src/mlir_lowering/trn/TrnEmit.cpp": '#include "runtime/op_record.h"\n',
        "src/runtime/op_record.h": "#include <ATen/core/ivalue.h>\n",
    })
    assert set(got) == {("compiler", "mlir_lowering/trn/TrnEmit.cpp", "ATen/core/ivalue.h")}
    assert "via runtime/op_record.h" in got[("compiler", "mlir_lowering/trn/TrnEmit.cpp", "ATen/core/ivalue.h")]


def test_the_compiler_including_the_torch_front_is_a_violation(tmp_path):
    got = found(tmp_path, {
        "src/mlir_lowering/trn_compile.cpp": '#include "mlir_lowering/ir_emitter.h"\n',
        "src/mlir_lowering/ir_emitter.h": "",
    })
    assert set(got) == {("compiler", "mlir_lowering/trn_compile.cpp", "mlir_lowering/ir_emitter.h")}


def test_the_base_including_more_than_the_base_is_a_violation(tmp_path):
    got = found(tmp_path, {
        "src/base/stats.h": '#include "base/knobs.h"\n#include "runtime/executor.h"\n',
        "src/base/knobs.h": "",
        "src/runtime/executor.h": "",
        "src/base/log.h": "#include <c10/util/Logging.h>\n",
    })
    # (runtime/ is also a higher layer than the base: the layer rule reports that include too.)
    assert set(got) == {("base", "base/stats.h", "runtime/executor.h"),
                        ("layer", "base/stats.h", "runtime/executor.h"),
                        ("base", "base/log.h", "c10/util/Logging.h")}


def test_a_folder_without_a_layer_is_a_violation(tmp_path):
    got = found(tmp_path, {"src/newthing/x.cpp": ""})
    assert set(got) == {("layer", "newthing/x.cpp", "-")}


def test_listed_violations_pass_and_fixed_ones_are_reported(tmp_path):
    write_tree(tmp_path, {
        "src/runtime/executor.h": '#include "mlir_lowering/group_lowering.h"\n',
        "src/mlir_lowering/group_lowering.h": "",
    })
    expectations = tmp_path / "expect.txt"
    expectations.write_text(
        "# comment\n"
        "layer runtime/executor.h -> mlir_lowering/group_lowering.h  # EarlierRefs\n"
        "mlir scheduler/grouper.cpp -> mlir/IR/MLIRContext.h  # fixed since\n")
    new, stale, _ = check_layers.check(str(tmp_path), str(expectations))
    assert new == []
    assert stale == ["mlir scheduler/grouper.cpp -> mlir/IR/MLIRContext.h  # fixed since"]


def test_an_expectation_without_a_reason_is_refused(tmp_path):
    expectations = tmp_path / "expect.txt"
    expectations.write_text("layer runtime/executor.h -> mlir_lowering/group_lowering.h\n")
    with pytest.raises(ValueError, match="reason"):
        check_layers.read_expectations(str(expectations))
