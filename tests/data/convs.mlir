// Two convolutions, 3x3 stride 1 on 8x8 and 3x3 stride 2 on 16x16 (the same loop sizes, 8x8 outputs,
// different strides), padded by tensor.pad, and a depthwise 3x3 convolution, for tune compile with
// tuned conv2d records (tests/e2e/ops_e2e_test.cpp). Input NHWC, filters HWCF / HWC.
func.func @convs(%X: memref<1x8x8x16xf32>, %F1: memref<3x3x16x32xf32>, %Y1: memref<1x8x8x32xf32>,
                 %X2: memref<1x16x16x16xf32>, %F2: memref<3x3x16x32xf32>, %Y2: memref<1x8x8x32xf32>,
                 %F3: memref<3x3x16xf32>, %Y3: memref<1x8x8x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %x = bufferization.to_tensor %X restrict : memref<1x8x8x16xf32> to tensor<1x8x8x16xf32>
  %f1 = bufferization.to_tensor %F1 restrict : memref<3x3x16x32xf32> to tensor<3x3x16x32xf32>
  %y1 = bufferization.to_tensor %Y1 restrict writable : memref<1x8x8x32xf32> to tensor<1x8x8x32xf32>
  %x2 = bufferization.to_tensor %X2 restrict : memref<1x16x16x16xf32> to tensor<1x16x16x16xf32>
  %f2 = bufferization.to_tensor %F2 restrict : memref<3x3x16x32xf32> to tensor<3x3x16x32xf32>
  %y2 = bufferization.to_tensor %Y2 restrict writable : memref<1x8x8x32xf32> to tensor<1x8x8x32xf32>
  %f3 = bufferization.to_tensor %F3 restrict : memref<3x3x16xf32> to tensor<3x3x16xf32>
  %y3 = bufferization.to_tensor %Y3 restrict writable : memref<1x8x8x16xf32> to tensor<1x8x8x16xf32>
  // 3x3, stride 1, padding 1: 8x8 -> 8x8
  %xp = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %zero : f32
  } : tensor<1x8x8x16xf32> to tensor<1x10x10x16xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%y1 : tensor<1x8x8x32xf32>) -> tensor<1x8x8x32xf32>
  %r1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%xp, %f1 : tensor<1x10x10x16xf32>, tensor<3x3x16x32xf32>) outs(%z1 : tensor<1x8x8x32xf32>) -> tensor<1x8x8x32xf32>
  bufferization.materialize_in_destination %r1 in restrict writable %Y1 : (tensor<1x8x8x32xf32>, memref<1x8x8x32xf32>) -> ()
  // 3x3, stride 2, padding 1: 16x16 -> 8x8 (the same loop sizes as the first)
  %x2p = tensor.pad %x2 low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %zero : f32
  } : tensor<1x16x16x16xf32> to tensor<1x18x18x16xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%y2 : tensor<1x8x8x32xf32>) -> tensor<1x8x8x32xf32>
  %r2 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%x2p, %f2 : tensor<1x18x18x16xf32>, tensor<3x3x16x32xf32>) outs(%z2 : tensor<1x8x8x32xf32>) -> tensor<1x8x8x32xf32>
  bufferization.materialize_in_destination %r2 in restrict writable %Y2 : (tensor<1x8x8x32xf32>, memref<1x8x8x32xf32>) -> ()
  // depthwise 3x3, stride 1, padding 1 on the first input
  %z3 = linalg.fill ins(%zero : f32) outs(%y3 : tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
  %r3 = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%xp, %f3 : tensor<1x10x10x16xf32>, tensor<3x3x16xf32>) outs(%z3 : tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
  bufferization.materialize_in_destination %r3 in restrict writable %Y3 : (tensor<1x8x8x16xf32>, memref<1x8x8x16xf32>) -> ()
  return
}
