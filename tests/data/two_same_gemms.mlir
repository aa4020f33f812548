// Two linalg.matmul ops of one workload (64x128x64) in one function, in destination-passing style
// on memrefs: the tuned library's schedule is applied to each in turn, in the same function.
func.func @two_same(%A: memref<64x64xf32>, %B: memref<64x128xf32>, %C: memref<64x128xf32>,
                    %D: memref<64x64xf32>, %E: memref<64x128xf32>, %F: memref<64x128xf32>) {
  %zero = arith.constant 0.0 : f32
  %a = bufferization.to_tensor %A restrict : memref<64x64xf32> to tensor<64x64xf32>
  %b = bufferization.to_tensor %B restrict : memref<64x128xf32> to tensor<64x128xf32>
  %c = bufferization.to_tensor %C restrict writable : memref<64x128xf32> to tensor<64x128xf32>
  %c0 = linalg.fill ins(%zero : f32) outs(%c : tensor<64x128xf32>) -> tensor<64x128xf32>
  %r1 = linalg.matmul ins(%a, %b : tensor<64x64xf32>, tensor<64x128xf32>) outs(%c0 : tensor<64x128xf32>) -> tensor<64x128xf32>
  bufferization.materialize_in_destination %r1 in restrict writable %C : (tensor<64x128xf32>, memref<64x128xf32>) -> ()
  %d = bufferization.to_tensor %D restrict : memref<64x64xf32> to tensor<64x64xf32>
  %e = bufferization.to_tensor %E restrict : memref<64x128xf32> to tensor<64x128xf32>
  %f = bufferization.to_tensor %F restrict writable : memref<64x128xf32> to tensor<64x128xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%f : tensor<64x128xf32>) -> tensor<64x128xf32>
  %r2 = linalg.matmul ins(%d, %e : tensor<64x64xf32>, tensor<64x128xf32>) outs(%f0 : tensor<64x128xf32>) -> tensor<64x128xf32>
  bufferization.materialize_in_destination %r2 in restrict writable %F : (tensor<64x128xf32>, memref<64x128xf32>) -> ()
  return
}
