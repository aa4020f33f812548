// A 3x3 stride-2 max pool with a -inf padding of 1 (ResNet-50's stem pool, small: 15x15x16 ->
// 8x8x16), for tests/e2e/model_test.cpp (Model.PoolsAndPadsAreVectorized).
func.func @pool(%X: memref<1x15x15x16xf32>, %Y: memref<1x8x8x16xf32>) {
  %x = bufferization.to_tensor %X restrict : memref<1x15x15x16xf32> to tensor<1x15x15x16xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %xp = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %ninf : f32
  } : tensor<1x15x15x16xf32> to tensor<1x17x17x16xf32>
  %e = tensor.empty() : tensor<1x8x8x16xf32>
  %init = linalg.fill ins(%ninf : f32) outs(%e : tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
  %w = tensor.empty() : tensor<3x3xf32>
  %p = linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%xp, %w : tensor<1x17x17x16xf32>, tensor<3x3xf32>) outs(%init : tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
  bufferization.materialize_in_destination %p in restrict writable %Y : (tensor<1x8x8x16xf32>, memref<1x8x8x16xf32>) -> ()
  return
}
