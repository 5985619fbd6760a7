"""A PyTorch bridge: train an nn.Module transformer with TGC.

    import tgc.torch
    trainer = tgc.torch.compile_module(model, example_inputs, train=TRAIN)
    loss = trainer.step(inputs, targets)   # tokens [batch, seq] -> mean cross-entropy
    trainer.write_back()                   # the trained weights into `model`

`compile_module` traces `model` with torch.fx (the forward maps token ids
[batch, seq] to logits [batch, seq, vocab]; or, when `example_inputs` is
(token ids, targets), the forward takes both and returns its own
F.cross_entropy loss), evaluates it once on
`example_inputs` to learn every shape and to fold what depends on buffers and
constants alone (causal masks, position ids), and writes the graph as a tg
@forward whose loss is the mean cross-entropy of the logits against the
targets, as F.cross_entropy computes it (or the module's own). tgc.compile builds the training step
from it (TRAIN.json's AdamW, schedule, clipping; note that TGC decays
matrices only, not biases and norm weights) and a tgc.Trainer starts from the
module's parameters, named as in model.named_parameters().

Mapped: nn.Embedding, nn.Linear, nn.LayerNorm, nn.GELU / F.gelu, nn.SiLU /
F.silu, nn.Dropout with p = 0, nn.Identity; +, -, *, / (tensors and
numbers), @ / torch.matmul, softmax over the last dimension, transpose,
permute, view, reshape, contiguous, split, masked_fill with a constant mask,
tanh, exp, sqrt, rsqrt, tensor indexing by constants and F.cross_entropy
with its defaults. Anything else is
refused with tgc.torch.UnsupportedError naming the operation and the line of
the model's source that calls it.
"""
import operator
import os
import tempfile

import numpy as np
import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F

import tgc

__all__ = ["compile_module", "TorchTrainer", "UnsupportedError"]


class UnsupportedError(tgc.TgcError):
    """An operation of the module that the bridge cannot map to tg."""


def _source_line(node):
    """'file.py:42' of the model's code that created `node`, if recorded."""
    trace = getattr(node, "stack_trace", None) or ""
    frames = [line.strip() for line in trace.splitlines() if line.strip().startswith("File ")]
    # The model's own code: a forward (of any module), outside torch.
    ours = [f for f in frames if "/torch/" not in f and not f.startswith('File "<')]
    chosen = [f for f in ours if f.endswith("in forward")] or ours
    if not chosen:
        return "an unknown line"
    parts = chosen[-1].split(",")
    return parts[0][len('File "'):].rstrip('"') + ":" + parts[1].strip().removeprefix("line ")


class _Writer:
    """The tg text of @forward, one op at a time."""

    def __init__(self):
        self.lines, self.count = [], 0

    @staticmethod
    def type_of(shape, dtype="f32"):
        return "tensor<" + "".join(f"{d}x" for d in shape) + dtype + ">"

    def op(self, text, shape, dtype="f32"):
        name = f"%v{self.count}"
        self.count += 1
        self.lines.append(f"    {name} = {text}")
        return _Value(name, tuple(shape), dtype)

    def constant(self, array, dtype="f32"):
        array = np.asarray(array)
        return self.op(f"tg.constant dense<{_nest(array, dtype)}> : "
                       f"{self.type_of(array.shape, dtype)}", array.shape, dtype)


def _float(v):
    """An f32 literal MLIR parses: 9 significant digits, infinities as bits."""
    v = float(v)
    if np.isfinite(v):
        return format(v, ".9e")
    return "0xFF800000" if v < 0 else "0x7F800000"


def _nest(array, dtype):
    """The elements of `array` as a (nested) MLIR dense literal."""
    if array.ndim == 0:
        v = array.item()
        if dtype != "f32":
            return str(int(v))
        return _float(v)
    return "[" + ", ".join(_nest(a, dtype) for a in array) + "]"


class _Value:
    def __init__(self, name, shape, dtype="f32"):
        self.name, self.shape, self.dtype = name, shape, dtype

    @property
    def type(self):
        return _Writer.type_of(self.shape, self.dtype)


def _broadcast(a, b):
    return tuple(np.broadcast_shapes(a, b))


class _Translator:
    def __init__(self, module, graph_module, values, params):
        self.module, self.gm, self.values, self.params = module, graph_module, values, params
        self.w = _Writer()
        self.env = {}
        self.dynamic = set()

    def fail(self, node, what):
        raise UnsupportedError(f"tgc.torch: {what} (node '{node.name}', called at "
                               f"{_source_line(node)}) has no tg mapping")

    def concrete(self, node):
        """The value `node` had on the example inputs."""
        return self.values[node.name]

    def tensor(self, arg, node):
        """The tg value of a tensor argument (folding constants)."""
        if isinstance(arg, torch.fx.Node):
            if arg.name in self.env:
                return self.env[arg.name]
            value = self.concrete(arg)
            if isinstance(value, torch.Tensor):
                return self.fold(arg, value)
            return self.scalar(value)
        if isinstance(arg, (int, float)):
            return self.scalar(arg)
        self.fail(node, f"an argument {arg!r}")

    def scalar(self, value):
        return self.w.constant(np.float32(value))

    def fold(self, node, value):
        """A value that depends on no input or parameter: a constant."""
        dtype = "i32" if not value.is_floating_point() else "f32"
        if value.dtype == torch.bool:
            self.fail(node, "a boolean tensor outside masked_fill")
        folded = self.w.constant(value.detach().cpu().numpy(), dtype)
        self.env[node.name] = folded
        return folded

    def binary(self, op, a, b):
        return self.w.op(f"tg.{op} {a.name}, {b.name} : {a.type}, {b.type} -> "
                         f"{_Writer.type_of(_broadcast(a.shape, b.shape))}",
                         _broadcast(a.shape, b.shape))

    def unary(self, op, x):
        return self.w.op(f"tg.{op} {x.name} : {x.type}", x.shape)

    def reshape(self, x, shape):
        shape = tuple(shape)
        if shape == x.shape:
            return x
        return self.w.op(f"tg.reshape {x.name} : {x.type} -> {_Writer.type_of(shape, x.dtype)}",
                         shape, x.dtype)

    def transpose(self, x, perm):
        perm = [p % len(x.shape) for p in perm]
        shape = tuple(x.shape[p] for p in perm)
        return self.w.op(f"tg.transpose {x.name} [{', '.join(map(str, perm))}] : {x.type} -> "
                         f"{_Writer.type_of(shape)}", shape)

    def matmul(self, a, b, transpose_rhs=False):
        if len(b.shape) > 2 and b.shape[:-2] != a.shape[:-2]:
            raise UnsupportedError("tgc.torch: a matmul whose batch dimensions differ")
        n = b.shape[-2] if transpose_rhs else b.shape[-1]
        shape = a.shape[:-1] + (n,)
        attrs = " {transpose_rhs = true}" if transpose_rhs else ""
        return self.w.op(f"tg.matmul {a.name}, {b.name}{attrs} : {a.type}, {b.type} -> "
                         f"{_Writer.type_of(shape)}", shape)

    def param(self, name):
        return self.env["param:" + name]

    # -- nodes --------------------------------------------------------------
    def run(self, node):
        """Maps `node` when it depends on the tokens or a parameter; the
        rest (masks, position ids, sizes) is folded where it is used."""
        if node.op == "placeholder" or (node.op == "get_attr" and node.target in self.params) or \
                (node.op == "call_module" and
                 any(True for _ in self.gm.get_submodule(node.target).parameters())):
            self.dynamic.add(node.name)
        elif any(n.name in self.dynamic for n in node.all_input_nodes):
            self.dynamic.add(node.name)
        elif node.op != "output":
            return
        handler = getattr(self, "node_" + node.op)
        result = handler(node)
        if result is not None:
            self.env[node.name] = result

    def node_placeholder(self, node):
        # The forward's arguments: token ids, then (optionally) targets.
        self.placeholders = getattr(self, "placeholders", 0) + 1
        return self.env["tokens" if self.placeholders == 1 else "targets"]

    def node_get_attr(self, node):
        if node.target in self.params:
            return self.param(node.target)
        return None  # a buffer: folded where used

    def node_output(self, node):
        out = node.args[0]
        if isinstance(out, (tuple, list)):
            self.fail(node, "a forward returning several values (return the logits, or the "
                            "loss of F.cross_entropy)")
        self.result = self.tensor(out, node)

    def node_call_module(self, node):
        sub = self.gm.get_submodule(node.target)
        x = self.tensor(node.args[0], node) if not isinstance(sub, nn.Embedding) else None
        if isinstance(sub, nn.Embedding):
            idx_node = node.args[0]
            idx = self.env.get(idx_node.name) if isinstance(idx_node, torch.fx.Node) else None
            if idx is None:
                value = self.concrete(idx_node)
                idx = self.w.constant(value.cpu().numpy().astype(np.int64), "i32")
            table = self.param(node.target + ".weight")
            shape = idx.shape + (table.shape[1],)
            return self.w.op(f"tg.embedding {table.name}[{idx.name}] : {table.type}, "
                             f"{idx.type} -> {_Writer.type_of(shape)}", shape)
        if isinstance(sub, nn.Linear):
            y = self.matmul(x, self.param(node.target + ".weight"), transpose_rhs=True)
            if sub.bias is not None:
                y = self.binary("add", y, self.param(node.target + ".bias"))
            return y
        if isinstance(sub, nn.LayerNorm):
            if len(sub.normalized_shape) != 1 or not sub.elementwise_affine:
                self.fail(node, "a LayerNorm over several dimensions or without weights")
            w, b = self.param(node.target + ".weight"), self.param(node.target + ".bias")
            return self.w.op(f"tg.layer_norm {x.name}, {w.name}, {b.name} {{epsilon = "
                             f"{format(float(sub.eps), '.17e')} : f64}} : {x.type}, {w.type}, {b.type} -> "
                             f"{x.type}", x.shape)
        if isinstance(sub, nn.GELU):
            return self.w.op(f"tg.gelu {x.name} {sub.approximate} : {x.type}", x.shape)
        if isinstance(sub, nn.SiLU):
            return self.unary("silu", x)
        if isinstance(sub, nn.Dropout):
            if sub.p != 0:
                self.fail(node, f"nn.Dropout(p={sub.p}) (TGC trains without dropout: p = 0)")
            return x
        if isinstance(sub, nn.Identity):
            return x
        self.fail(node, f"module {type(sub).__name__}")

    def node_call_method(self, node):
        name = node.target
        if name in ("size", "dim"):
            return None  # a number, used concretely
        x = self.tensor(node.args[0], node) if isinstance(node.args[0], torch.fx.Node) and \
            isinstance(self.concrete(node.args[0]), torch.Tensor) else None
        result = self.concrete(node)
        if name in ("view", "reshape"):
            return self.reshape(x, result.shape)
        if name == "contiguous":
            return x
        if name in ("transpose", "permute"):
            if name == "transpose":
                a, b = (d % len(x.shape) for d in node.args[1:3])
                perm = list(range(len(x.shape)))
                perm[a], perm[b] = perm[b], perm[a]
            else:
                perm = node.args[1:] if not isinstance(node.args[1], (list, tuple)) \
                    else node.args[1]
            return self.transpose(x, list(perm))
        if name == "split":
            return None  # getitem picks the pieces
        if name == "masked_fill":
            return self.masked_fill(node, x)
        if name == "softmax":
            return self.softmax(node, x, node.args[1] if len(node.args) > 1
                                else node.kwargs.get("dim"))
        if name in ("tanh", "exp", "sqrt", "rsqrt"):
            return self.unary(name, x)
        self.fail(node, f"the tensor method .{name}()")

    def cross_entropy(self, node):
        """F.cross_entropy(logits [N, V], targets [N]) with its defaults: the
        mean over the tokens (ignore_index -100 never matches a token id)."""
        defaults = {"weight": None, "reduction": "mean", "label_smoothing": 0.0,
                    "ignore_index": -100, "size_average": None, "reduce": None}
        for key, value in node.kwargs.items():
            if key not in defaults or defaults[key] != value:
                self.fail(node, f"F.cross_entropy with {key}={value!r} (its defaults only)")
        if len(node.args) > 2:
            self.fail(node, "F.cross_entropy with positional options (its defaults only)")
        logits, targets = self.tensor(node.args[0], node), self.tensor(node.args[1], node)
        if targets.dtype != "i32" or logits.shape[:-1] != targets.shape:
            self.fail(node, "F.cross_entropy of other than logits [..., V] and token ids [...]")
        self.loss_logits = logits
        return self.w.op(f"tg.cross_entropy {logits.name}, {targets.name} : {logits.type}, "
                         f"{targets.type} -> tensor<f32>", ())

    def masked_fill(self, node, x):
        mask = node.args[1]
        if isinstance(mask, torch.fx.Node) and mask.name in self.env:
            self.fail(node, "masked_fill with a mask computed from the inputs")
        mask = self.concrete(mask).cpu().numpy().astype(bool)
        value = float(node.args[2])
        if value != float("-inf"):
            self.fail(node, f"masked_fill with {value} (only -inf masks map to an add)")
        additive = np.where(mask, value, 0.0).astype(np.float32)
        return self.binary("add", x, self.w.constant(additive))

    def softmax(self, node, x, dim):
        if dim is None or dim % len(x.shape) != len(x.shape) - 1:
            self.fail(node, f"softmax over dimension {dim} (the last only)")
        return self.unary("softmax", x)

    def node_call_function(self, node):
        fn = node.target
        result = self.concrete(node)
        if not isinstance(result, torch.Tensor):
            return None  # sizes and the tuples of split: used concretely
        binary = {operator.add: "add", torch.add: "add", operator.sub: "sub",
                  torch.sub: "sub", operator.mul: "mul", torch.mul: "mul",
                  operator.truediv: "div", torch.div: "div"}
        if fn in binary:
            return self.binary(binary[fn], self.tensor(node.args[0], node),
                               self.tensor(node.args[1], node))
        if fn in (operator.matmul, torch.matmul):
            return self.matmul(self.tensor(node.args[0], node), self.tensor(node.args[1], node))
        if fn is operator.getitem:
            return self.getitem(node, result)
        if fn in (F.softmax, torch.softmax):
            return self.softmax(node, self.tensor(node.args[0], node),
                                node.args[1] if len(node.args) > 1 else node.kwargs.get("dim"))
        if fn is F.gelu:
            mode = node.kwargs.get("approximate", "none")
            x = self.tensor(node.args[0], node)
            return self.w.op(f"tg.gelu {x.name} {mode} : {x.type}", x.shape)
        if fn is F.silu:
            return self.unary("silu", self.tensor(node.args[0], node))
        if fn in (torch.tanh, torch.exp, torch.sqrt, torch.rsqrt):
            return self.unary(fn.__name__, self.tensor(node.args[0], node))
        if fn is F.cross_entropy:
            return self.cross_entropy(node)
        if fn is torch.transpose:
            return self.node_call_method(node)
        self.fail(node, f"function {getattr(fn, '__name__', fn)}")

    def getitem(self, node, result):
        source, index = node.args
        if source.op == "call_method" and source.target == "split":
            x = self.tensor(source.args[0], node)
            size, dim = source.args[1], source.kwargs.get("dim", source.args[2]
                                                          if len(source.args) > 2 else 0)
            dim %= len(x.shape)
            offsets = [0] * len(x.shape)
            offsets[dim] = index * size
            sizes = list(x.shape)
            sizes[dim] = result.shape[dim]
            return self.w.op(f"tg.slice {x.name}[[{', '.join(map(str, offsets))}]] "
                             f"[[{', '.join(map(str, sizes))}]] : {x.type} -> "
                             f"{_Writer.type_of(sizes)}", sizes)
        # x[a:b, :, c:d]: constant slices with step 1.
        x = self.tensor(source, node)
        index = index if isinstance(index, tuple) else (index,)
        if len(index) <= len(x.shape) and all(isinstance(i, slice) and i.step in (None, 1)
                                              for i in index):
            offsets, sizes = [], []
            for d, extent in enumerate(x.shape):
                start, stop, _ = (index[d] if d < len(index) else slice(None)).indices(extent)
                offsets.append(start)
                sizes.append(max(0, stop - start))
            return self.w.op(f"tg.slice {x.name}[[{', '.join(map(str, offsets))}]] "
                             f"[[{', '.join(map(str, sizes))}]] : {x.type} -> "
                             f"{_Writer.type_of(sizes)}", sizes)
        self.fail(node, f"indexing by {index!r} (constant slices with step 1 only)")


def compile_module(module, example_inputs, train, target="cpu"):
    """Traces `module` (token ids [batch, seq] -> logits [batch, seq, vocab]),
    maps it to tg and compiles its training step with `train` (a TRAIN.json
    dict or path; its batch_size and seq_len must be example_inputs'
    shape). Returns a TorchTrainer holding the module's parameters."""
    tracer = torch.fx.Tracer()
    tracer.record_stack_traces = True
    graph = tracer.trace(module)
    gm = torch.fx.GraphModule(module, graph)
    inputs = example_inputs if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    inputs = tuple(torch.as_tensor(x) for x in inputs)
    tokens = inputs[0]
    if len(inputs) > 2 or any(x.shape != tokens.shape or x.dtype not in (torch.int32, torch.int64)
                              or x.dim() != 2 for x in inputs):
        raise ValueError("tgc.torch.compile_module: example_inputs must be integer token ids "
                         "[batch, seq] (and targets of that shape for a module that computes "
                         f"its loss), not {[(tuple(x.shape), x.dtype) for x in inputs]}")
    # The value of every node on the example: shapes, and what folds.
    values = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            value = super().run_node(n)
            values[n.name] = value
            return value

    with torch.no_grad():
        output = Recorder(gm).run(*inputs)
    computes_loss = len(inputs) == 2
    if not isinstance(output, torch.Tensor) or output.dim() != (0 if computes_loss else 3):
        raise UnsupportedError(
            "tgc.torch.compile_module: the module must return logits [batch, seq, vocab] from "
            "token ids, or, given targets too, the loss of F.cross_entropy")
    params = dict(module.named_parameters())
    t = _Translator(module, gm, values, params)
    args = [f"%tokens: {_Writer.type_of(tokens.shape, 'i32')} {{tg.input = \"tokens\"}}",
            f"%targets: {_Writer.type_of(tokens.shape, 'i32')} {{tg.input = \"targets\"}}"]
    for i, (name, p) in enumerate(params.items()):
        value = _Value(f"%p{i}", tuple(p.shape))
        t.env["param:" + name] = value
        args.append(f"{value.name}: {value.type} {{tg.init = #tg.init<normal, std = 0.02>, "
                    f"tg.param = \"{name}\"}}")
    t.env["tokens"] = _Value("%tokens", tuple(tokens.shape), "i32")
    t.env["targets"] = _Value("%targets", tuple(tokens.shape), "i32")
    for node in gm.graph.nodes:
        t.run(node)
    if computes_loss:
        # The module's own loss; the logits it took, as [batch, seq, vocab].
        loss = t.result
        logits = getattr(t, "loss_logits", None)
        if logits is None or loss.shape != ():
            raise UnsupportedError("tgc.torch: the module's loss must be F.cross_entropy of "
                                   "its logits")
        out = t.reshape(logits, tuple(tokens.shape) + (logits.shape[-1],))
    else:
        out = t.result
        if out.shape != tuple(output.shape):
            raise UnsupportedError("tgc.torch: the mapped logits have shape "
                                   f"{out.shape}, the module's {tuple(output.shape)}")
        loss = t.w.op(f"tg.cross_entropy {out.name}, %targets : {out.type}, "
                      f"{_Writer.type_of(tokens.shape, 'i32')} -> tensor<f32>", ())
    text = ("module {\n  func.func @forward(" + ", ".join(args) + ") -> (tensor<f32> "
            "{tg.output = \"loss\"}, " + out.type + " {tg.output = \"logits\"}) {\n" +
            "\n".join(t.w.lines) + f"\n    return {loss.name}, {out.name} : tensor<f32>, "
            f"{out.type}\n  }}\n}}\n")
    program = _compile_text(text, train, target)
    return TorchTrainer(module, program, text)


def _compile_text(text, train, target):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "module.mlir")
        with open(path, "w") as f:
            f.write(text)
        return tgc.compile(path, train=train, target=target)


class TorchTrainer(tgc.Trainer):
    """A tgc.Trainer that starts from a module's parameters and writes the
    trained ones back into it. `tg_text` is the @forward the module became."""

    def __init__(self, module, program, tg_text):
        super().__init__(program)
        self.module, self.tg_text = module, tg_text
        for name, p in module.named_parameters():
            self.set_weight(name, p.detach().cpu().float().numpy())

    def step(self, inputs, targets):
        return super().step(np.asarray(torch.as_tensor(inputs)),
                            np.asarray(torch.as_tensor(targets)))

    def write_back(self):
        """Copies the trained parameters into the module."""
        weights = self.weights()
        with torch.no_grad():
            for name, p in self.module.named_parameters():
                p.copy_(torch.from_numpy(weights[name]).to(p.dtype))
