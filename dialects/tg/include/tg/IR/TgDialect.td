#ifndef TG_DIALECT_TD
#define TG_DIALECT_TD

include "mlir/IR/OpBase.td"

def Tg_Dialect : Dialect {
  let name = "tg";
  let summary = "Static-shaped tensor ops for transformer training graphs";
  let description = [{
    `tg` describes a transformer training graph at the level a user thinks of
    it: embeddings, linear layers, norms, attention, losses and the optimizer.
    Every op works on statically shaped ranked tensors. Model parameters are
    function arguments carrying a `tg.param` attribute with their Hugging Face
    name and a `tg.init` attribute with their initialisation rule
    (`#tg.init<...>`); data inputs carry `tg.input` (e.g. "tokens"), AdamW
    moments `tg.state = #tg.state<adam_m, "NAME">`, results that update a
    state argument `tg.updates = #tg.state<...>` and other results
    `tg.output` (e.g. "loss"). A module may declare the device mesh its
    training step runs on with `tg.mesh_axes` (axis names) and
    `tg.mesh_shape` (their sizes); without them it runs on one device.
  }];
  let useDefaultAttributePrinterParser = 1;
  let cppNamespace = "::mlir::tg";
  let hasConstantMaterializer = 0;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let hasOperationAttrVerify = 1;
}

class Tg_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tg_Dialect, mnemonic, traits>;

#endif // TG_DIALECT_TD
