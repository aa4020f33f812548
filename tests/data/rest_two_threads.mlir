// The untuned rest on two threads (tune compile; the sextant.num_threads attribute stands for a
// tuned op's multi-threaded schedule): an elementwise exp over 256x256 and a row sum of it, each
// split between the threads by rows; y[i] = sum_j exp(x[i][j]).
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @rows(%X: memref<256x256xf32>, %E: memref<256x256xf32>, %Y: memref<256xf32>) attributes {sextant.num_threads = 2 : i64} {
  %zero = arith.constant 0.0 : f32
  %x = bufferization.to_tensor %X restrict : memref<256x256xf32> to tensor<256x256xf32>
  %e0 = bufferization.to_tensor %E restrict writable : memref<256x256xf32> to tensor<256x256xf32>
  %e = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<256x256xf32>) outs(%e0 : tensor<256x256xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<256x256xf32>
  bufferization.materialize_in_destination %e in restrict writable %E : (tensor<256x256xf32>, memref<256x256xf32>) -> ()
  %y0 = bufferization.to_tensor %Y restrict writable : memref<256xf32> to tensor<256xf32>
  %y1 = linalg.fill ins(%zero : f32) outs(%y0 : tensor<256xf32>) -> tensor<256xf32>
  %y = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%e : tensor<256x256xf32>) outs(%y1 : tensor<256xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<256xf32>
  bufferization.materialize_in_destination %y in restrict writable %Y : (tensor<256xf32>, memref<256xf32>) -> ()
  return
}
