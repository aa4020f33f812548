// Two GEMMs Sextant has tuned (a linalg.matmul 64x32x16 and a matmul-shaped linalg.generic
// 128x64x32) and one it has not (linalg.matmul 8x8x8), in destination-passing style on memrefs
// so that the compiled function can be called from C.
#mA = affine_map<(d0, d1, d2) -> (d0, d2)>
#mB = affine_map<(d0, d1, d2) -> (d2, d1)>
#mC = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @two_gemms(%A: memref<64x16xf32>, %B: memref<16x32xf32>, %C: memref<64x32xf32>,
                     %D: memref<128x32xf32>, %E: memref<32x64xf32>, %F: memref<128x64xf32>,
                     %X: memref<8x8xf32>, %Y: memref<8x8xf32>, %Z: memref<8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %a = bufferization.to_tensor %A restrict : memref<64x16xf32> to tensor<64x16xf32>
  %b = bufferization.to_tensor %B restrict : memref<16x32xf32> to tensor<16x32xf32>
  %c = bufferization.to_tensor %C restrict writable : memref<64x32xf32> to tensor<64x32xf32>
  %c0 = linalg.fill ins(%zero : f32) outs(%c : tensor<64x32xf32>) -> tensor<64x32xf32>
  %r1 = linalg.matmul ins(%a, %b : tensor<64x16xf32>, tensor<16x32xf32>) outs(%c0 : tensor<64x32xf32>) -> tensor<64x32xf32>
  bufferization.materialize_in_destination %r1 in restrict writable %C : (tensor<64x32xf32>, memref<64x32xf32>) -> ()

  %d = bufferization.to_tensor %D restrict : memref<128x32xf32> to tensor<128x32xf32>
  %e = bufferization.to_tensor %E restrict : memref<32x64xf32> to tensor<32x64xf32>
  %f = bufferization.to_tensor %F restrict writable : memref<128x64xf32> to tensor<128x64xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%f : tensor<128x64xf32>) -> tensor<128x64xf32>
  %r2 = linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%d, %e : tensor<128x32xf32>, tensor<32x64xf32>) outs(%f0 : tensor<128x64xf32>) {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %p = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
  } -> tensor<128x64xf32>
  bufferization.materialize_in_destination %r2 in restrict writable %F : (tensor<128x64xf32>, memref<128x64xf32>) -> ()

  %x = bufferization.to_tensor %X restrict : memref<8x8xf32> to tensor<8x8xf32>
  %y = bufferization.to_tensor %Y restrict : memref<8x8xf32> to tensor<8x8xf32>
  %z = bufferization.to_tensor %Z restrict writable : memref<8x8xf32> to tensor<8x8xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%z : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r3 = linalg.matmul ins(%x, %y : tensor<8x8xf32>, tensor<8x8xf32>) outs(%z0 : tensor<8x8xf32>) -> tensor<8x8xf32>
  bufferization.materialize_in_destination %r3 in restrict writable %Z : (tensor<8x8xf32>, memref<8x8xf32>) -> ()
  return
}
