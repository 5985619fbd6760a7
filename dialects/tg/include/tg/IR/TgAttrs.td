//===- TgAttrs.td - typed function-boundary attributes of tg -----------*-===//
//
// The values of the `tg.init`, `tg.state` and `tg.updates` argument/result
// attributes (see TgDialect.h for the attribute names and TgDialect.cpp for
// the function-level checks).
//
//===----------------------------------------------------------------------===//

#ifndef TG_ATTRS_TD
#define TG_ATTRS_TD

include "tg/IR/TgDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Tg_InitKind : I32EnumAttr<"InitKind", "initialisation rule of a parameter", [
    I32EnumAttrCase<"Zeros", 0, "zeros">,
    I32EnumAttrCase<"Ones", 1, "ones">,
    I32EnumAttrCase<"Normal", 2, "normal">]> {
  let cppNamespace = "::mlir::tg";
  let genSpecializedAttr = 0;
}

def Tg_StateKind : I32EnumAttr<"StateKind", "kind of training state", [
    I32EnumAttrCase<"Param", 0, "param">,
    I32EnumAttrCase<"AdamM", 1, "adam_m">,
    I32EnumAttrCase<"AdamV", 2, "adam_v">,
    // A parameter's copy in the compute precision (bf16 or f16), which the
    // step reads instead of casting the f32 master (tg-carry-compute-copies).
    I32EnumAttrCase<"Compute", 3, "compute">]> {
  let cppNamespace = "::mlir::tg";
  let genSpecializedAttr = 0;
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

class Tg_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Tg_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Tg_InitAttr : Tg_Attr<"Init", "init"> {
  let summary = "Initialisation rule of a parameter (the value of tg.init)";
  let description = [{
    `#tg.init<zeros>`, `#tg.init<ones>` or `#tg.init<normal, std = 0.02>`
    (a normal distribution with mean 0). `getStd()` is the standard
    deviation as an f64 FloatAttr, null unless the kind is `normal`;
    `getStdValue()` gives it as a double (0 when absent). The verifier
    requires a finite std > 0 for `normal` and no std otherwise.
  }];
  let parameters = (ins EnumParameter<Tg_InitKind>:$kind,
                        OptionalParameter<"::mlir::FloatAttr">:$std);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let builders = [
    AttrBuilder<(ins "::mlir::tg::InitKind":$kind), [{
      return $_get($_ctxt, kind, ::mlir::FloatAttr());
    }]>,
    AttrBuilder<(ins "double":$std), [{
      return $_get($_ctxt, ::mlir::tg::InitKind::Normal,
                   ::mlir::FloatAttr::get(::mlir::Float64Type::get($_ctxt), std));
    }]>
  ];
  let extraClassDeclaration = [{
    /// The standard deviation of a `normal` rule; 0 for the others.
    double getStdValue() const {
      return getStd() ? getStd().getValueAsDouble() : 0.0;
    }
  }];
}

def Tg_StateAttr : Tg_Attr<"State", "state"> {
  let summary = "A piece of training state: a parameter, an AdamW moment or "
                "a parameter's compute copy";
  let description = [{
    `#tg.state<param, "NAME">`, `#tg.state<adam_m, "NAME">`,
    `#tg.state<adam_v, "NAME">` or `#tg.state<compute, "NAME">` (the
    parameter rounded to the step's compute precision, kept between steps),
    where NAME is the Hugging Face name of the parameter. Moment and copy
    arguments carry it as `tg.state`; results that hold the new value of a
    state argument carry it as `tg.updates`.
  }];
  let parameters = (ins EnumParameter<Tg_StateKind>:$kind,
                        "::mlir::StringAttr":$name);
  let assemblyFormat = "`<` $kind `,` $name `>`";
  let genVerifyDecl = 1;
  let builders = [
    AttrBuilder<(ins "::mlir::tg::StateKind":$kind, "::llvm::StringRef":$name), [{
      return $_get($_ctxt, kind, ::mlir::StringAttr::get($_ctxt, name));
    }]>
  ];
}

def Tg_ShardAttr : Tg_Attr<"Shard", "shard"> {
  let summary = "How a parameter is split over a mesh axis (the value of tg.shard)";
  let description = [{
    `#tg.shard<axis = "tensor", dim = 0, fullShape = [50257, 768],
    paddedSize = 50260, blocks = 1>`: the argument holds the rank's share of
    the Hugging Face tensor of shape `fullShape`, whose dim `dim` is padded
    with zeros to `paddedSize` and read as `blocks` equal segments, each
    split evenly over the ranks of `axis` (the artifact's ParameterShard,
    runtime/artifact/tgx.fbs, documents the index mapping).
  }];
  let parameters = (ins StringRefParameter<>:$axis, "int64_t":$dim,
                        "::mlir::DenseI64ArrayAttr":$fullShape,
                        "int64_t":$paddedSize, "int64_t":$blocks);
  let assemblyFormat = "`<` struct(params) `>`";
}

def Tg_OptimizerShardAttr : Tg_Attr<"OptimizerShard", "optimizer_shard"> {
  let summary = "An AdamW moment split over a mesh axis (ZeRO-1; the value "
                "of tg.optimizer_shard)";
  let description = [{
    `#tg.optimizer_shard<axis = "data", chunk = 96>`: the moment argument
    holds the rank's `chunk` elements of its parameter's local share (the
    whole tensor, or its tg.shard share), flattened and padded with zeros
    to `chunk` x the ranks of `axis`; the rank at index i of `axis` holds
    elements [i x chunk, (i + 1) x chunk). The artifact's OptimizerShard
    (runtime/artifact/tgx.fbs) carries it to the runtime.
  }];
  let parameters = (ins StringRefParameter<>:$axis, "int64_t":$chunk);
  let assemblyFormat = "`<` struct(params) `>`";
}

#endif // TG_ATTRS_TD
