// Two GEMMs of the same workload (64x32x16), one initialised by a zero fill and one that
// accumulates into its output (C += A * B: its init is the function's argument). Tuned schedules
// may fuse a zero fill into their tiles; the accumulating one must keep its init.
func.func @accumulate(%A: memref<64x16xf32>, %B: memref<16x32xf32>, %C: memref<64x32xf32>, %D: memref<64x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %a = bufferization.to_tensor %A restrict : memref<64x16xf32> to tensor<64x16xf32>
  %b = bufferization.to_tensor %B restrict : memref<16x32xf32> to tensor<16x32xf32>
  %c = bufferization.to_tensor %C restrict writable : memref<64x32xf32> to tensor<64x32xf32>
  %c0 = linalg.fill ins(%zero : f32) outs(%c : tensor<64x32xf32>) -> tensor<64x32xf32>
  %r1 = linalg.matmul ins(%a, %b : tensor<64x16xf32>, tensor<16x32xf32>) outs(%c0 : tensor<64x32xf32>) -> tensor<64x32xf32>
  bufferization.materialize_in_destination %r1 in restrict writable %C : (tensor<64x32xf32>, memref<64x32xf32>) -> ()
  %d = bufferization.to_tensor %D restrict writable : memref<64x32xf32> to tensor<64x32xf32>
  %r2 = linalg.matmul ins(%a, %b : tensor<64x16xf32>, tensor<16x32xf32>) outs(%d : tensor<64x32xf32>) -> tensor<64x32xf32>
  bufferization.materialize_in_destination %r2 in restrict writable %D : (tensor<64x32xf32>, memref<64x32xf32>) -> ()
  return
}
