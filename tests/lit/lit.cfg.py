# lit configuration for torch-trn's FileCheck tests: one .mlir file per pass or pipeline
# (host/, trn/), and one .test file per op family of the front (front/: recorded groups in
# front/Inputs/, replayed by torch-trn-replay-group).
# Run through ./dev test, or: lit -v tests/lit --param build_dir=build
import os

import lit.formats

config.name = "torch-trn"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)

build_dir = lit_config.params.get("build_dir") or os.environ.get("TRN_BUILD_DIR")
if not build_dir:
    lit_config.fatal("pass --param build_dir=<cmake build dir> (where bin/torch-trn-opt is)")
build_dir = os.path.abspath(build_dir)
config.test_exec_root = os.path.join(build_dir, "lit")

llvm_bin = "/usr/lib/llvm-16/bin"  # FileCheck from Debian's llvm-16-tools
config.environment["PATH"] = os.pathsep.join(
    [os.path.join(build_dir, "bin"), llvm_bin, config.environment.get("PATH", os.environ["PATH"])])
for tool in ("torch-trn-opt", "torch-trn-replay-group"):
    if not os.path.exists(os.path.join(build_dir, "bin", tool)):
        lit_config.fatal(f"{tool} not found in {build_dir}/bin: build first (./dev build)")
