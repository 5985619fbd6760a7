func.func @yield_outside(%x: tensor<2xf32>) -> tensor<2xf32> {
  tg.yield %x : tensor<2xf32>
}
