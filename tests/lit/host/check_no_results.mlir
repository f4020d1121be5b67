// RUN: torch-trn-opt %s -split-input-file -verify-diagnostics -trn-check-no-results

// A public function that still returns a buffer after bufferization is a compile error (its C
// ABI would not match the caller's).
// expected-error @+1 {{still returns 1 value(s) after bufferization}}
func.func @returns_buffer(%a: memref<4xf32>) -> memref<4xf32> {
  return %a : memref<4xf32>
}

// -----

// Functions writing only into their arguments pass; private ones are not checked.
func.func @writes_out(%a: memref<4xf32>, %out: memref<4xf32>) {
  memref.copy %a, %out : memref<4xf32> to memref<4xf32>
  return
}
func.func private @internal(%a: memref<4xf32>) -> memref<4xf32> {
  return %a : memref<4xf32>
}
