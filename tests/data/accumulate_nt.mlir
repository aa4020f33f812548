// accumulate.mlir with B stored transposed (NT: B is 64x32, N x K): two GEMMs of the workload
// gemm:NT:64x64x32, one initialised by a zero fill and one that accumulates into its output
// (C += A * B^T). The transposed-B route's schedule may start its register tiles from zeros; the
// accumulating op must keep its init.
func.func @accumulate_nt(%A: memref<64x32xf32>, %B: memref<64x32xf32>, %C: memref<64x64xf32>, %D: memref<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %a = bufferization.to_tensor %A restrict : memref<64x32xf32> to tensor<64x32xf32>
  %b = bufferization.to_tensor %B restrict : memref<64x32xf32> to tensor<64x32xf32>
  %c = bufferization.to_tensor %C restrict writable : memref<64x64xf32> to tensor<64x64xf32>
  %c0 = linalg.fill ins(%zero : f32) outs(%c : tensor<64x64xf32>) -> tensor<64x64xf32>
  %r1 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%a, %b : tensor<64x32xf32>, tensor<64x32xf32>) outs(%c0 : tensor<64x64xf32>) -> tensor<64x64xf32>
  bufferization.materialize_in_destination %r1 in restrict writable %C : (tensor<64x64xf32>, memref<64x64xf32>) -> ()
  %d = bufferization.to_tensor %D restrict writable : memref<64x64xf32> to tensor<64x64xf32>
  %r2 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%a, %b : tensor<64x32xf32>, tensor<64x32xf32>) outs(%d : tensor<64x64xf32>) -> tensor<64x64xf32>
  bufferization.materialize_in_destination %r2 in restrict writable %D : (tensor<64x64xf32>, memref<64x64xf32>) -> ()
  return
}
