// Two NT GEMMs of M = 4 (4x256x512: B stored N x K) whose tuned schedule is the split-K GEMV
// route (cpu_route_gemv.cpp, gemv = 2): one plain, one with a bias + ReLU epilogue, in
// destination-passing style on memrefs so that the compiled function can be called from C. The
// route's actions define a %fill handle, which once clashed with the epilogue sequence's argument
// of that name and made `tune compile` fail on any module with such a GEMM.
#mA = affine_map<(d0, d1, d2) -> (d0, d2)>
#mBt = affine_map<(d0, d1, d2) -> (d1, d2)>
#mC = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @splitk(%A: memref<4x512xf32>, %B: memref<256x512xf32>, %Bias: memref<256xf32>,
                  %C: memref<4x256xf32>, %D: memref<4x256xf32>) {
  %zero = arith.constant 0.0 : f32
  %a = bufferization.to_tensor %A restrict : memref<4x512xf32> to tensor<4x512xf32>
  %b = bufferization.to_tensor %B restrict : memref<256x512xf32> to tensor<256x512xf32>
  %bias = bufferization.to_tensor %Bias restrict : memref<256xf32> to tensor<256xf32>
  %c = bufferization.to_tensor %C restrict writable : memref<4x256xf32> to tensor<4x256xf32>
  %c0 = linalg.fill ins(%zero : f32) outs(%c : tensor<4x256xf32>) -> tensor<4x256xf32>
  %r1 = linalg.matmul indexing_maps = [#mA, #mBt, #mC] ins(%a, %b : tensor<4x512xf32>, tensor<256x512xf32>)
      outs(%c0 : tensor<4x256xf32>) -> tensor<4x256xf32>
  bufferization.materialize_in_destination %r1 in restrict writable %C : (tensor<4x256xf32>, memref<4x256xf32>) -> ()

  %d = bufferization.to_tensor %D restrict writable : memref<4x256xf32> to tensor<4x256xf32>
  %e = tensor.empty() : tensor<4x256xf32>
  %e0 = linalg.fill ins(%zero : f32) outs(%e : tensor<4x256xf32>) -> tensor<4x256xf32>
  %r2 = linalg.matmul indexing_maps = [#mA, #mBt, #mC] ins(%a, %b : tensor<4x512xf32>, tensor<256x512xf32>)
      outs(%e0 : tensor<4x256xf32>) -> tensor<4x256xf32>
  %o = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%r2, %bias : tensor<4x256xf32>, tensor<256xf32>) outs(%d : tensor<4x256xf32>) {
    ^bb0(%x: f32, %y: f32, %out: f32):
      %s = arith.addf %x, %y : f32
      %m = arith.maximumf %s, %zero : f32
      linalg.yield %m : f32
  } -> tensor<4x256xf32>
  bufferization.materialize_in_destination %o in restrict writable %D : (tensor<4x256xf32>, memref<4x256xf32>) -> ()
  return
}
