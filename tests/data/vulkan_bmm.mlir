// Vulkan test module: attention's two batched matmuls on memrefs (device buffers), one per
// function, C initialised by a linalg.fill. @scores is Q.K^T (NT, tuned in the test), @values is
// P.V (NN, the default schedule).
func.func @scores(%Q: memref<4x64x32xf32>, %K: memref<4x64x32xf32>, %S: memref<4x64x64xf32>) {
  %q = bufferization.to_tensor %Q restrict : memref<4x64x32xf32> to tensor<4x64x32xf32>
  %k = bufferization.to_tensor %K restrict : memref<4x64x32xf32> to tensor<4x64x32xf32>
  %s = bufferization.to_tensor %S restrict writable : memref<4x64x64xf32> to tensor<4x64x64xf32>
  %zero = arith.constant 0.0 : f32
  %z = linalg.fill ins(%zero : f32) outs(%s : tensor<4x64x64xf32>) -> tensor<4x64x64xf32>
  %r = linalg.batch_matmul indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]
         ins(%q, %k : tensor<4x64x32xf32>, tensor<4x64x32xf32>) outs(%z : tensor<4x64x64xf32>) -> tensor<4x64x64xf32>
  bufferization.materialize_in_destination %r in restrict writable %S : (tensor<4x64x64xf32>, memref<4x64x64xf32>) -> ()
  return
}
func.func @values(%P: memref<4x64x64xf32>, %V: memref<4x64x32xf32>, %O: memref<4x64x32xf32>) {
  %p = bufferization.to_tensor %P restrict : memref<4x64x64xf32> to tensor<4x64x64xf32>
  %v = bufferization.to_tensor %V restrict : memref<4x64x32xf32> to tensor<4x64x32xf32>
  %o = bufferization.to_tensor %O restrict writable : memref<4x64x32xf32> to tensor<4x64x32xf32>
  %zero = arith.constant 0.0 : f32
  %z = linalg.fill ins(%zero : f32) outs(%o : tensor<4x64x32xf32>) -> tensor<4x64x32xf32>
  %r = linalg.batch_matmul ins(%p, %v : tensor<4x64x64xf32>, tensor<4x64x32xf32>) outs(%z : tensor<4x64x32xf32>) -> tensor<4x64x32xf32>
  bufferization.materialize_in_destination %r in restrict writable %O : (tensor<4x64x32xf32>, memref<4x64x32xf32>) -> ()
  return
}
