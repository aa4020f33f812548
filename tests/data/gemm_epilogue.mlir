// A GEMM with the epilogue the ONNX importer writes (bias, residual add, ReLU on the GEMM's own
// result, in place), in destination-passing style so that C can call it: C = max(A * B + 0.25 + R, 0).
#map = affine_map<(d0, d1) -> (d0, d1)>
#mapb = affine_map<(d0, d1) -> (0, d1)>
func.func @gemm_epilogue(%A: memref<64x32xf32>, %B: memref<32x128xf32>, %R: memref<64x128xf32>, %C: memref<64x128xf32>) {
  %zero = arith.constant 0.0 : f32
  %bias = arith.constant dense<0.25> : tensor<1x128xf32>
  %a = bufferization.to_tensor %A restrict : memref<64x32xf32> to tensor<64x32xf32>
  %b = bufferization.to_tensor %B restrict : memref<32x128xf32> to tensor<32x128xf32>
  %r = bufferization.to_tensor %R restrict : memref<64x128xf32> to tensor<64x128xf32>
  %e = tensor.empty() : tensor<64x128xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<64x128xf32>) -> tensor<64x128xf32>
  %m = linalg.matmul ins(%a, %b : tensor<64x32xf32>, tensor<32x128xf32>) outs(%z : tensor<64x128xf32>) -> tensor<64x128xf32>
  %y = linalg.generic {indexing_maps = [#mapb, #map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%bias, %r : tensor<1x128xf32>, tensor<64x128xf32>) outs(%m : tensor<64x128xf32>) {
  ^bb0(%bb: f32, %rr: f32, %o: f32):
    %s = arith.addf %o, %bb : f32
    %s2 = arith.addf %s, %rr : f32
    %t = arith.maximumf %s2, %zero : f32
    linalg.yield %t : f32
  } -> tensor<64x128xf32>
  bufferization.materialize_in_destination %y in restrict writable %C : (tensor<64x128xf32>, memref<64x128xf32>) -> ()
  return
}
