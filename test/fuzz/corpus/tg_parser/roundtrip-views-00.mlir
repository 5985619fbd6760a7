// Round trip of the constant, cast and view ops: parse, print, parse again.
// The generic form must round-trip to the same custom form.

func.func @constant() -> (tensor<2x3xf32>, tensor<4xi64>, tensor<bf16>, tensor<2xf16>, tensor<3xi32>, tensor<2xf64>) {
  %0 = tg.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %1 = tg.constant dense<[0, -1, 2, 3]> : tensor<4xi64>
  %2 = tg.constant dense<0.5> : tensor<bf16>
  %3 = tg.constant dense<-2.0> : tensor<2xf16>
  %4 = tg.constant dense<7> : tensor<3xi32>
  %5 = tg.constant dense<[0.1, 0.25]> : tensor<2xf64>
  return %0, %1, %2, %3, %4, %5 : tensor<2x3xf32>, tensor<4xi64>, tensor<bf16>, tensor<2xf16>, tensor<3xi32>, tensor<2xf64>
}

func.func @cast(%f: tensor<2x3xf32>, %i: tensor<2x3xi64>) -> (tensor<2x3xbf16>, tensor<2x3xf32>, tensor<2x3xf64>) {
  %0 = tg.cast %f : tensor<2x3xf32> -> tensor<2x3xbf16>
  %1 = tg.cast %i : tensor<2x3xi64> -> tensor<2x3xf32>
  %2 = tg.cast %0 : tensor<2x3xbf16> -> tensor<2x3xf64>
  return %0, %1, %2 : tensor<2x3xbf16>, tensor<2x3xf32>, tensor<2x3xf64>
}

func.func @reshape(%x: tensor<2x3x4xf32>, %i: tensor<6xi32>, %s: tensor<f32>) -> (tensor<6x4xf32>, tensor<24xf32>, tensor<2x3xi32>, tensor<1x1xf32>) {
  %0 = tg.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %1 = tg.reshape %0 : tensor<6x4xf32> -> tensor<24xf32>
  %2 = tg.reshape %i : tensor<6xi32> -> tensor<2x3xi32>
  // A scalar to a [1, 1] tensor.
  %3 = tg.reshape %s : tensor<f32> -> tensor<1x1xf32>
  return %0, %1, %2, %3 : tensor<6x4xf32>, tensor<24xf32>, tensor<2x3xi32>, tensor<1x1xf32>
}

func.func @transpose(%x: tensor<2x3x4x5xf32>, %m: tensor<3x7xi64>, %v: tensor<8xf16>) -> (tensor<2x4x3x5xf32>, tensor<5x4x3x2xf32>, tensor<7x3xi64>, tensor<8xf16>) {
  %0 = tg.transpose %x [0, 2, 1, 3] : tensor<2x3x4x5xf32> -> tensor<2x4x3x5xf32>
  %1 = tg.transpose %x [3, 2, 1, 0] : tensor<2x3x4x5xf32> -> tensor<5x4x3x2xf32>
  %2 = tg.transpose %m [1, 0] : tensor<3x7xi64> -> tensor<7x3xi64>
  // The identity permutation of a vector.
  %3 = tg.transpose %v [0] : tensor<8xf16> -> tensor<8xf16>
  return %0, %1, %2, %3 : tensor<2x4x3x5xf32>, tensor<5x4x3x2xf32>, tensor<7x3xi64>, tensor<8xf16>
}

func.func @broadcast(%v: tensor<4xf32>, %c: tensor<3x1xf32>, %s: tensor<f32>, %i: tensor<1x4xi32>) -> (tensor<2x3x4xf32>, tensor<3x5xf32>, tensor<2x2xf32>, tensor<3x4xi32>, tensor<4xf32>) {
  // Trailing alignment: [4] -> [2, 3, 4].
  %0 = tg.broadcast %v : tensor<4xf32> -> tensor<2x3x4xf32>
  %1 = tg.broadcast %c : tensor<3x1xf32> -> tensor<3x5xf32>
  %2 = tg.broadcast %s : tensor<f32> -> tensor<2x2xf32>
  %3 = tg.broadcast %i : tensor<1x4xi32> -> tensor<3x4xi32>
  // The identity broadcast.
  %4 = tg.broadcast %v : tensor<4xf32> -> tensor<4xf32>
  return %0, %1, %2, %3, %4 : tensor<2x3x4xf32>, tensor<3x5xf32>, tensor<2x2xf32>, tensor<3x4xi32>, tensor<4xf32>
}

func.func @slice(%x: tensor<4x6xf32>, %i: tensor<10xi64>) -> (tensor<2x3xf32>, tensor<4x6xf32>, tensor<0xi64>, tensor<1xi64>) {
  %0 = tg.slice %x [[1, 3]] [[2, 3]] : tensor<4x6xf32> -> tensor<2x3xf32>
  // The whole tensor.
  %1 = tg.slice %x [[0, 0]] [[4, 6]] : tensor<4x6xf32> -> tensor<4x6xf32>
  // An empty slice at the very end.
  %2 = tg.slice %i [[10]] [[0]] : tensor<10xi64> -> tensor<0xi64>
  %3 = tg.slice %i [[9]] [[1]] : tensor<10xi64> -> tensor<1xi64>
  return %0, %1, %2, %3 : tensor<2x3xf32>, tensor<4x6xf32>, tensor<0xi64>, tensor<1xi64>
}

func.func @pad(%x: tensor<2x3xf32>, %h: tensor<4xbf16>) -> (tensor<5x4xf32>, tensor<2x3xf32>, tensor<6xbf16>) {
  %0 = tg.pad %x low [1, 0] high [2, 1] : tensor<2x3xf32> -> tensor<5x4xf32>
  // No padding at all.
  %1 = tg.pad %x low [0, 0] high [0, 0] : tensor<2x3xf32> -> tensor<2x3xf32>
  %2 = tg.pad %h low [2] high [0] : tensor<4xbf16> -> tensor<6xbf16>
  return %0, %1, %2 : tensor<5x4xf32>, tensor<2x3xf32>, tensor<6xbf16>
}

func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>, %c: tensor<4x3xf32>, %i: tensor<3xi64>) -> (tensor<2x8xf32>, tensor<2x11xf32>, tensor<6x3xf32>, tensor<2x3xf32>, tensor<6xi64>) {
  %0 = tg.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  // A negative axis counts from the end; three inputs.
  %1 = tg.concat %a, %b, %a {axis = -1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x3xf32>) -> tensor<2x11xf32>
  %2 = tg.concat %a, %c {axis = -2 : i64} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<6x3xf32>
  // A single input.
  %3 = tg.concat %a {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = tg.concat %i, %i {axis = 0 : i64} : (tensor<3xi64>, tensor<3xi64>) -> tensor<6xi64>
  return %0, %1, %2, %3, %4 : tensor<2x8xf32>, tensor<2x11xf32>, tensor<6x3xf32>, tensor<2x3xf32>, tensor<6xi64>
}
