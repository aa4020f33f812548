// GPU test module: GEMMs in destination-passing style on memrefs (device buffers), one per
// function (GPU schedules build one launch per function), C initialised by a linalg.fill.
// @proj and @small are tuned in the tests; @mlp (64x64x64 f32) gets the default schedule.
func.func @proj(%A: memref<256x128xf32>, %B: memref<128x256xf32>, %C: memref<256x256xf32>) {
  %a = bufferization.to_tensor %A restrict : memref<256x128xf32> to tensor<256x128xf32>
  %b = bufferization.to_tensor %B restrict : memref<128x256xf32> to tensor<128x256xf32>
  %c = bufferization.to_tensor %C restrict writable : memref<256x256xf32> to tensor<256x256xf32>
  %zero = arith.constant 0.0 : f32
  %z = linalg.fill ins(%zero : f32) outs(%c : tensor<256x256xf32>) -> tensor<256x256xf32>
  %r = linalg.matmul ins(%a, %b : tensor<256x128xf32>, tensor<128x256xf32>) outs(%z : tensor<256x256xf32>) -> tensor<256x256xf32>
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
func.func @mlp(%A: memref<64x64xf32>, %B: memref<64x64xf32>, %C: memref<64x64xf32>) {
  %a = bufferization.to_tensor %A restrict : memref<64x64xf32> to tensor<64x64xf32>
  %b = bufferization.to_tensor %B restrict : memref<64x64xf32> to tensor<64x64xf32>
  %c = bufferization.to_tensor %C restrict writable : memref<64x64xf32> to tensor<64x64xf32>
  %zero = arith.constant 0.0 : f32
  %z = linalg.fill ins(%zero : f32) outs(%c : tensor<64x64xf32>) -> tensor<64x64xf32>
  %r = linalg.matmul ins(%a, %b : tensor<64x64xf32>, tensor<64x64xf32>) outs(%z : tensor<64x64xf32>) -> tensor<64x64xf32>
  bufferization.materialize_in_destination %r in restrict writable %C : (tensor<64x64xf32>, memref<64x64xf32>) -> ()
  return
}
