// GPU test module: GEMMs in destination-passing style on memrefs (device buffers), one per
// function (GPU schedules build one launch per function), C initialised by a linalg.fill.
// @proj and @small are tuned in the tests; @other (8x8x8) matches no schedule and has none.
func.func @proj(%A: memref<256x128xf16>, %B: memref<128x256xf16>, %C: memref<256x256xf32>) {
  %a = bufferization.to_tensor %A restrict : memref<256x128xf16> to tensor<256x128xf16>
  %b = bufferization.to_tensor %B restrict : memref<128x256xf16> to tensor<128x256xf16>
  %c = bufferization.to_tensor %C restrict writable : memref<256x256xf32> to tensor<256x256xf32>
  %zero = arith.constant 0.0 : f32
  %z = linalg.fill ins(%zero : f32) outs(%c : tensor<256x256xf32>) -> tensor<256x256xf32>
  %r = linalg.matmul ins(%a, %b : tensor<256x128xf16>, tensor<128x256xf16>) outs(%z : tensor<256x256xf32>) -> tensor<256x256xf32>
  bufferization.materialize_in_destination %r in restrict writable %C : (tensor<256x256xf32>, memref<256x256xf32>) -> ()
  return
}
func.func @small(%A: memref<128x64xf32>, %B: memref<64x128xf32>, %C: memref<128x128xf32>) {
  %a = bufferization.to_tensor %A restrict : memref<128x64xf32> to tensor<128x64xf32>
  %b = bufferization.to_tensor %B restrict : memref<64x128xf32> to tensor<64x128xf32>
  %c = bufferization.to_tensor %C restrict writable : memref<128x128xf32> to tensor<128x128xf32>
  %zero = arith.constant 0.0 : f32
  %z = linalg.fill ins(%zero : f32) outs(%c : tensor<128x128xf32>) -> tensor<128x128xf32>
  %r = linalg.matmul ins(%a, %b : tensor<128x64xf32>, tensor<64x128xf32>) outs(%z : tensor<128x128xf32>) -> tensor<128x128xf32>
  bufferization.materialize_in_destination %r in restrict writable %C : (tensor<128x128xf32>, memref<128x128xf32>) -> ()
  return
}
func.func @other(%A: memref<8x8xf32>, %B: memref<8x8xf32>, %C: memref<8x8xf32>) {
  %a = bufferization.to_tensor %A restrict : memref<8x8xf32> to tensor<8x8xf32>
  %b = bufferization.to_tensor %B restrict : memref<8x8xf32> to tensor<8x8xf32>
  %c = bufferization.to_tensor %C restrict writable : memref<8x8xf32> to tensor<8x8xf32>
  %zero = arith.constant 0.0 : f32
  %z = linalg.fill ins(%zero : f32) outs(%c : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r = linalg.matmul ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%z : tensor<8x8xf32>) -> tensor<8x8xf32>
  bufferization.materialize_in_destination %r in restrict writable %C : (tensor<8x8xf32>, memref<8x8xf32>) -> ()
  return
}
