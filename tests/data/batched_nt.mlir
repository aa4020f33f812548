// Attention's Q.K^T as a batched matmul with B transposed (batch 2, 32x64, K 32), for tune compile
// with a tuned batch_matmul record (tests/e2e/ops_e2e_test.cpp).
func.func @qkt(%Q: memref<2x32x32xf32>, %K: memref<2x64x32xf32>, %S: memref<2x32x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %q = bufferization.to_tensor %Q restrict : memref<2x32x32xf32> to tensor<2x32x32xf32>
  %k = bufferization.to_tensor %K restrict : memref<2x64x32xf32> to tensor<2x64x32xf32>
  %s = bufferization.to_tensor %S restrict writable : memref<2x32x64xf32> to tensor<2x32x64xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%s : tensor<2x32x64xf32>) -> tensor<2x32x64xf32>
  %r = linalg.batch_matmul indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>] ins(%q, %k : tensor<2x32x32xf32>, tensor<2x64x32xf32>) outs(%s0 : tensor<2x32x64xf32>) -> tensor<2x32x64xf32>
  bufferization.materialize_in_destination %r in restrict writable %S : (tensor<2x32x64xf32>, memref<2x32x64xf32>) -> ()
  return
}
