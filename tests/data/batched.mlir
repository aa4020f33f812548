// A batched GEMM (batch 4, 64x128x32) for tune compile: no tuned schedule, the default one per batch element.
func.func @bmm(%A: memref<4x64x32xf32>, %B: memref<4x32x128xf32>, %C: memref<4x64x128xf32>) {
  %zero = arith.constant 0.0 : f32
  %a = bufferization.to_tensor %A restrict : memref<4x64x32xf32> to tensor<4x64x32xf32>
  %b = bufferization.to_tensor %B restrict : memref<4x32x128xf32> to tensor<4x32x128xf32>
  %c = bufferization.to_tensor %C restrict writable : memref<4x64x128xf32> to tensor<4x64x128xf32>
  %c0 = linalg.fill ins(%zero : f32) outs(%c : tensor<4x64x128xf32>) -> tensor<4x64x128xf32>
  %r = linalg.batch_matmul ins(%a, %b : tensor<4x64x32xf32>, tensor<4x32x128xf32>) outs(%c0 : tensor<4x64x128xf32>) -> tensor<4x64x128xf32>
  bufferization.materialize_in_destination %r in restrict writable %C : (tensor<4x64x128xf32>, memref<4x64x128xf32>) -> ()
  return
}
