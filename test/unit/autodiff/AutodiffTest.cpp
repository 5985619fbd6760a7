// Checks the vector-Jacobian product of every differentiable tg op, as
// assembled by buildGradients, against central finite differences on the
// reference evaluator in float64.
//
// Each case is one op applied to function arguments. The test builds
//   func @f(inputs..., %R) -> loss,  loss = reduce_sum(op(inputs...) * R)
// with R a fixed random tensor (so the VJP sees a non-trivial incoming
// gradient), clones it as @grad, lets buildGradients append the gradients of
// the float inputs, and compares them with (L(x + h e_i) - L(x - h e_i)) / 2h.
#include "tg/Evaluator/Evaluator.h"
#include "tg/IR/TgDialect.h"
#include "tg/IR/TgOps.h"
#include "tg/Passes/Autodiff.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FormatVariadic.h"

#include "../support/ParsedModule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

using mlir::tg::eval::Arithmetic;
using mlir::tg::eval::Tensor;

namespace {

//===----------------------------------------------------------------------===//
// Case description
//===----------------------------------------------------------------------===//

using Shape = std::vector<int64_t>;

/// One argument of the op under test: a float tensor (differentiated, values
/// uniform in [lo, hi)) or an integer tensor (fixed `indices`, not
/// differentiated).
struct Input {
  Shape shape;
  double lo = -1, hi = 1;
  std::string element = "f64";
  bool isIndex = false;
  std::vector<double> indices;
};

Input floats(Shape shape, double lo = -1, double hi = 1) {
  return Input{std::move(shape), lo, hi, "f64", false, {}};
}

/// Integer indices uniform in [0, bound).
Input indices(Shape shape, int64_t bound, std::mt19937 &rng) {
  Input in{std::move(shape), 0, 0, "i64", true, {}};
  int64_t n = 1;
  for (int64_t d : in.shape)
    n *= d;
  std::uniform_int_distribution<int64_t> dist(0, bound - 1);
  for (int64_t i = 0; i < n; ++i)
    in.indices.push_back(double(dist(rng)));
  return in;
}

/// `body` is MLIR defining %y from the arguments %a0, %a1, ...; in it `$r` is
/// the result type and `$0`, `$1`, ... the argument types.
struct Case {
  std::string name;
  std::vector<Input> inputs;
  std::string body;
  Shape result;
  std::string resultElement = "f64";
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

std::string tensorType(const Shape &shape, const std::string &element) {
  std::string s = "tensor<";
  for (int64_t d : shape)
    s += std::to_string(d) + "x";
  return s + element + ">";
}

int64_t numElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string shapeList(const Shape &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// @f for `c`: `%y = op(...)`, then loss = reduce_sum(%y * %R).
std::string buildSource(const Case &c) {
  std::string resultType = tensorType(c.result, c.resultElement);
  std::string scalarType = tensorType({}, c.resultElement);
  std::string body = c.body;
  auto substitute = [&](const std::string &key, const std::string &value) {
    for (size_t pos = body.find(key); pos != std::string::npos;
         pos = body.find(key, pos + value.size()))
      body.replace(pos, key.size(), value);
  };
  substitute("$r", resultType);
  // Highest index first so that $1 does not match the start of $10.
  for (size_t i = c.inputs.size(); i-- > 0;)
    substitute("$" + std::to_string(i),
               tensorType(c.inputs[i].shape, c.inputs[i].element));

  std::string src = "func.func @f(";
  for (size_t i = 0; i < c.inputs.size(); ++i)
    src += "%a" + std::to_string(i) + ": " +
           tensorType(c.inputs[i].shape, c.inputs[i].element) + ", ";
  src += "%R: " + resultType + ") -> " + scalarType + " {\n";
  src += "  " + body + "\n";
  src += "  %yr = tg.mul %y, %R : " + resultType + ", " + resultType + " -> " +
         resultType + "\n";
  if (c.result.empty()) {
    src += "  return %yr : " + scalarType + "\n}\n";
    return src;
  }
  Shape all;
  for (size_t i = 0; i < c.result.size(); ++i)
    all.push_back(int64_t(i));
  src += "  %loss = tg.reduce_sum %yr " + shapeList(all) + " : " + resultType +
         " -> " + scalarType + "\n";
  src += "  return %loss : " + scalarType + "\n}\n";
  return src;
}

//===----------------------------------------------------------------------===//
// Shared machinery
//===----------------------------------------------------------------------===//

/// A parsed module whose diagnostics are collected rather than printed.
struct Module : tgtest::ParsedModule {
  using ParsedModule::ParsedModule;

  /// Clones @f as @grad returning (loss, d loss / d arg for each arg in
  /// `wrt`), the gradients built by buildGradients.
  mlir::LogicalResult addGradFunction(llvm::ArrayRef<unsigned> wrt) {
    mlir::func::FuncOp grad = func("f").clone();
    grad.setSymName("grad");
    module->push_back(grad);
    auto ret = llvm::cast<mlir::func::ReturnOp>(
        grad.getBody().front().getTerminator());
    mlir::Value loss = ret.getOperand(0);
    llvm::SmallVector<mlir::Value> wrtValues;
    for (unsigned i : wrt)
      wrtValues.push_back(grad.getArgument(i));
    mlir::OpBuilder builder(ret);
    auto grads = mlir::tg::buildGradients(builder, loss, wrtValues);
    if (failed(grads))
      return mlir::failure();
    llvm::SmallVector<mlir::Value> results{loss};
    results.append(grads->begin(), grads->end());
    mlir::func::ReturnOp::create(builder, ret.getLoc(), results);
    ret.erase();
    grad.setFunctionType(builder.getFunctionType(
        grad.getArgumentTypes(), mlir::ValueRange(results).getTypes()));
    return mlir::verify(*module);
  }
};

double norm(const std::vector<double> &v) {
  double sum = 0;
  for (double x : v)
    sum += x * x;
  return std::sqrt(sum);
}

/// Relative error ||analytic - numeric|| / max(||numeric||, 1e-12) of one
/// gradient, and ||numeric||.
struct GradError {
  double relative, numericNorm;
};

/// Central differences of @f with respect to args[index] (step h), compared
/// with `analytic`.
GradError compareWithFiniteDifferences(mlir::func::FuncOp f,
                                       std::vector<Tensor> args,
                                       size_t index, const Tensor &analytic,
                                       double h = 1e-6) {
  auto loss = [&]() {
    auto results = mlir::tg::eval::evaluate(f, args, Arithmetic::Float64);
    EXPECT_TRUE(succeeded(results));
    return succeeded(results) ? (*results)[0].data[0] : NAN;
  };
  Tensor &x = args[index];
  std::vector<double> numeric(x.data.size()), difference(x.data.size());
  for (size_t i = 0; i < x.data.size(); ++i) {
    double saved = x.data[i];
    x.data[i] = saved + h;
    double plus = loss();
    x.data[i] = saved - h;
    double minus = loss();
    x.data[i] = saved;
    numeric[i] = (plus - minus) / (2 * h);
    difference[i] = analytic.data[i] - numeric[i];
  }
  double numericNorm = norm(numeric);
  return {norm(difference) / std::max(numericNorm, 1e-12), numericNorm};
}

/// The whole check for one case.
void checkCase(const Case &c, unsigned seed) {
  std::string source = buildSource(c);
  Module m(source);
  ASSERT_TRUE(m.module) << m.diagnostics << "\n" << source;
  std::vector<unsigned> wrt;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (!c.inputs[i].isIndex)
      wrt.push_back(unsigned(i));
  ASSERT_TRUE(succeeded(m.addGradFunction(wrt))) << m.diagnostics << "\n"
                                                 << source;

  std::mt19937 rng(seed);
  std::vector<Tensor> args;
  for (const Input &in : c.inputs) {
    Tensor t{in.shape, {}};
    if (in.isIndex) {
      t.data = in.indices;
    } else {
      std::uniform_real_distribution<double> dist(in.lo, in.hi);
      for (int64_t i = 0; i < numElements(in.shape); ++i)
        t.data.push_back(dist(rng));
    }
    args.push_back(std::move(t));
  }
  {
    // Positive weights: with signs mixed, the gradient of a broadcast operand
    // (a sum of R over the broadcast dims) can cancel to nearly zero, and the
    // relative error then measures finite-difference rounding noise.
    std::uniform_real_distribution<double> dist(0.5, 1.5);
    Tensor r{c.result, {}};
    for (int64_t i = 0; i < numElements(c.result); ++i)
      r.data.push_back(dist(rng));
    args.push_back(std::move(r));
  }

  auto forward = mlir::tg::eval::evaluate(m.func("f"), args, Arithmetic::Float64);
  ASSERT_TRUE(succeeded(forward)) << m.diagnostics;
  auto results =
      mlir::tg::eval::evaluate(m.func("grad"), args, Arithmetic::Float64);
  ASSERT_TRUE(succeeded(results)) << m.diagnostics;
  ASSERT_EQ(results->size(), wrt.size() + 1);
  EXPECT_DOUBLE_EQ((*results)[0].data[0], (*forward)[0].data[0])
      << "@grad's loss differs from @f's";

  for (size_t g = 0; g < wrt.size(); ++g) {
    const Tensor &analytic = (*results)[g + 1];
    ASSERT_EQ(analytic.shape, c.inputs[wrt[g]].shape) << "operand " << wrt[g];
    GradError error =
        compareWithFiniteDifferences(m.func("f"), args, wrt[g], analytic);
    // Visible with --gtest_output=xml.
    ::testing::Test::RecordProperty("relative_error_" + std::to_string(wrt[g]),
                                    llvm::formatv("{0:e}", error.relative).str());
    EXPECT_GT(error.numericNorm, 1e-8)
        << "operand " << wrt[g] << ": the loss does not depend on it";
    EXPECT_LT(error.relative, 1e-6)
        << c.name << ": gradient of operand " << wrt[g]
        << " (||numeric|| = " << error.numericNorm << ")";
  }
}

//===----------------------------------------------------------------------===//
// The table of cases
//===----------------------------------------------------------------------===//

/// A random dim in [lo, hi].
int64_t dim(std::mt19937 &rng, int64_t lo = 1, int64_t hi = 4) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

/// numpy broadcast of two shapes (assumed compatible).
Shape broadcastShapes(Shape a, Shape b) {
  if (a.size() < b.size())
    std::swap(a, b);
  Shape out = a;
  size_t lead = a.size() - b.size();
  for (size_t i = 0; i < b.size(); ++i)
    out[lead + i] = std::max(a[lead + i], b[i]);
  return out;
}

std::string suffix(const Shape &shape) {
  if (shape.empty())
    return "Scalar";
  std::string s;
  for (int64_t d : shape)
    s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

void addBinaryCases(std::vector<Case> &cases, std::mt19937 &rng) {
  struct Binary {
    std::string op, name;
    double lhsLo, lhsHi, rhsLo, rhsHi;
  };
  const Binary ops[] = {{"add", "Add", -1, 1, -1, 1},
                        {"sub", "Sub", -1, 1, -1, 1},
                        {"mul", "Mul", -1, 1, -1, 1},
                        {"div", "Div", -1, 1, 0.5, 2},
                        {"pow", "Pow", 0.5, 2, -1.5, 1.5}};
  Shape big{2, 3, 4};
  std::vector<std::pair<Shape, Shape>> shapes = {
      {big, big},      {big, {4}},   {big, {3, 1}}, {big, {1}}, {big, {}},
      {{4}, big},      {{3, 1}, big}, {{}, big},    {{2, 1, 4}, {3, 1}},
      {{}, {}},
  };
  // Random same-rank shapes with random size-1 dims on either side.
  for (int i = 0; i < 2; ++i) {
    Shape a, b;
    for (int d = 0; d < 3; ++d) {
      int64_t n = dim(rng, 2, 4);
      int which = std::uniform_int_distribution<int>(0, 2)(rng);
      a.push_back(which == 1 ? 1 : n);
      b.push_back(which == 2 ? 1 : n);
    }
    shapes.push_back({a, b});
  }
  for (const Binary &op : ops)
    for (const auto &[l, r] : shapes) {
      Shape out = broadcastShapes(l, r);
      cases.push_back({op.name + "_" + suffix(l) + "_" + suffix(r),
                       {floats(l, op.lhsLo, op.lhsHi),
                        floats(r, op.rhsLo, op.rhsHi)},
                       "%y = tg." + op.op + " %a0, %a1 : $0, $1 -> $r",
                       out});
    }
}

void addUnaryCases(std::vector<Case> &cases, std::mt19937 &rng) {
  struct Unary {
    std::string op, name;
    double lo, hi;
  };
  const Unary ops[] = {
      {"neg", "Neg", -1, 1},         {"exp", "Exp", -1, 1},
      {"log", "Log", 0.5, 2},        {"tanh", "Tanh", -2, 2},
      {"sqrt", "Sqrt", 0.5, 2},      {"rsqrt", "Rsqrt", 0.5, 2},
      {"cos", "Cos", -3, 3},         {"sin", "Sin", -3, 3},
      {"silu", "Silu", -4, 4},       {"gelu", "GeluNone", -3, 3},
      {"gelu", "GeluTanh", -3, 3},   {"softmax", "Softmax", -2, 2},
  };
  for (const Unary &op : ops) {
    Shape shape{dim(rng, 1, 3), dim(rng, 2, 5)};
    std::string attr = op.name == "GeluNone"   ? " none"
                       : op.name == "GeluTanh" ? " tanh"
                                               : "";
    cases.push_back({op.name + "_" + suffix(shape),
                     {floats(shape, op.lo, op.hi)},
                     "%y = tg." + op.op + " %a0" + attr + " : $0",
                     shape});
  }
  Shape scalar{};
  cases.push_back({"Exp_Scalar", {floats(scalar)}, "%y = tg.exp %a0 : $0",
                   scalar});
  cases.push_back({"Softmax_2x3x5", {floats({2, 3, 5}, -2, 2)},
                   "%y = tg.softmax %a0 : $0", {2, 3, 5}});
}

void addViewCases(std::vector<Case> &cases, std::mt19937 &rng) {
  // cast
  Shape s{dim(rng, 2, 3), dim(rng, 2, 4)};
  cases.push_back({"Cast_f64_f64", {floats(s)},
                   "%y = tg.cast %a0 : $0 -> $r", s});
  Input f32 = floats(s);
  f32.element = "f32";
  cases.push_back({"Cast_f32_f64", {f32}, "%y = tg.cast %a0 : $0 -> $r", s});
  Case toF32{"Cast_f64_f32", {floats(s)}, "%y = tg.cast %a0 : $0 -> $r", s};
  toF32.resultElement = "f32";
  cases.push_back(toF32);

  // reshape
  cases.push_back({"Reshape_2x3x4_to_6x4", {floats({2, 3, 4})},
                   "%y = tg.reshape %a0 : $0 -> $r", {6, 4}});
  cases.push_back({"Reshape_6_to_1x3x2", {floats({6})},
                   "%y = tg.reshape %a0 : $0 -> $r", {1, 3, 2}});

  // transpose: random permutations of a random rank-3 shape, and rank 2.
  for (int i = 0; i < 3; ++i) {
    Shape in{dim(rng, 2, 4), dim(rng, 2, 4), dim(rng, 2, 4)};
    Shape perm{0, 1, 2};
    std::shuffle(perm.begin(), perm.end(), rng);
    if (i == 0 || perm == Shape{0, 1, 2})
      perm = {2, 0, 1}; // not an involution: exercises the inverse.
    Shape out;
    for (int64_t p : perm)
      out.push_back(in[p]);
    cases.push_back({"Transpose_" + suffix(in) + "_perm" + suffix(perm),
                     {floats(in)},
                     "%y = tg.transpose %a0 " + shapeList(perm) + " : $0 -> $r",
                     out});
  }
  cases.push_back({"Transpose_3x5", {floats({3, 5})},
                   "%y = tg.transpose %a0 [1, 0] : $0 -> $r", {5, 3}});

  // broadcast
  for (const auto &[from, to] : std::vector<std::pair<Shape, Shape>>{
           {{4}, {2, 3, 4}},
           {{3, 1}, {2, 3, 4}},
           {{1, 3, 1}, {2, 3, 4}},
           {{}, {2, 3}},
           {{2, 1}, {2, 5}},
           {{2, 3}, {2, 3}}})
    cases.push_back({"Broadcast_" + suffix(from) + "_to_" + suffix(to),
                     {floats(from)}, "%y = tg.broadcast %a0 : $0 -> $r", to});

  // slice
  {
    Shape in{dim(rng, 3, 5), dim(rng, 3, 5), dim(rng, 2, 3)};
    Shape offsets{1, 0, 1}, sizes{in[0] - 2, in[1] - 1, in[2] - 1};
    cases.push_back({"Slice_" + suffix(in),
                     {floats(in)},
                     "%y = tg.slice %a0 [" + shapeList(offsets) + "] [" +
                         shapeList(sizes) + "] : $0 -> $r",
                     sizes});
    cases.push_back({"Slice_5_whole_tail", {floats({5})},
                     "%y = tg.slice %a0 [[2]] [[3]] : $0 -> $r", {3}});
  }

  // pad
  {
    Shape in{dim(rng, 1, 3), dim(rng, 2, 4)};
    Shape low{1, 0}, high{2, 1};
    Shape out{in[0] + 3, in[1] + 1};
    cases.push_back({"Pad_" + suffix(in),
                     {floats(in)},
                     "%y = tg.pad %a0 low " + shapeList(low) + " high " +
                         shapeList(high) + " : $0 -> $r",
                     out});
    cases.push_back({"Pad_2x3x2_lowOnly", {floats({2, 3, 2})},
                     "%y = tg.pad %a0 low [0, 2, 1] high [0, 0, 0] : $0 -> $r",
                     {2, 5, 3}});
  }

  // concat along every axis of a rank-3 tensor, negative axes too, and three
  // inputs.
  for (int64_t axis : {0, 1, 2, -1, -2, -3}) {
    int64_t a = axis < 0 ? axis + 3 : axis;
    Shape base{dim(rng, 1, 3), dim(rng, 1, 3), dim(rng, 1, 3)};
    Shape x = base, y = base;
    x[a] = dim(rng, 1, 3);
    y[a] = dim(rng, 1, 3);
    Shape out = base;
    out[a] = x[a] + y[a];
    cases.push_back({"Concat_axis" + std::string(axis < 0 ? "m" : "") +
                         std::to_string(std::abs(axis)),
                     {floats(x), floats(y)},
                     "%y = tg.concat %a0, %a1 {axis = " + std::to_string(axis) +
                         " : i64} : ($0, $1) -> $r",
                     out});
  }
  cases.push_back({"Concat_three_axism1",
                   {floats({2, 1}), floats({2, 3}), floats({2, 2})},
                   "%y = tg.concat %a0, %a1, %a2 {axis = -1 : i64} : ($0, $1, "
                   "$2) -> $r",
                   {2, 6}});
}

void addReduceCases(std::vector<Case> &cases, std::mt19937 &rng) {
  for (std::string op : {"reduce_sum", "reduce_mean"})
    for (bool keep : {false, true})
      for (const Shape &axes :
           std::vector<Shape>{{0}, {1}, {-1}, {0, 2}, {2, -3}, {0, 1, 2}}) {
        Shape in{dim(rng, 2, 4), dim(rng, 2, 4), dim(rng, 2, 4)};
        Shape out;
        for (int64_t i = 0; i < 3; ++i) {
          bool reduced = false;
          for (int64_t a : axes)
            reduced |= (a < 0 ? a + 3 : a) == i;
          if (!reduced)
            out.push_back(in[i]);
          else if (keep)
            out.push_back(1);
        }
        std::string axesName;
        for (int64_t a : axes)
          axesName += (a < 0 ? "m" : "") + std::to_string(std::abs(a));
        cases.push_back(
            {std::string(op == "reduce_sum" ? "ReduceSum" : "ReduceMean") +
                 "_axes" + axesName + (keep ? "_keep" : ""),
             {floats(in)},
             "%y = tg." + op + " %a0 " + shapeList(axes) +
                 (keep ? " {keep_dims = true}" : "") + " : $0 -> $r",
             out});
      }
}

void addMatmulCases(std::vector<Case> &cases, std::mt19937 &rng) {
  struct Layout {
    std::string name;
    Shape batch;
    bool sharedRhs;
  };
  const Layout layouts[] = {{"Plain", {}, false},
                            {"Batched", {2}, false},
                            {"Batched4d", {2, 2}, false},
                            {"SharedRhs", {2}, true},
                            {"SharedRhs4d", {2, 3}, true}};
  for (const Layout &layout : layouts) {
    for (bool tl : {false, true})
      for (bool tr : {false, true}) {
        int64_t m = dim(rng, 1, 4), k = dim(rng, 2, 4), n = dim(rng, 1, 4);
        Shape lhs = layout.batch, rhs = layout.sharedRhs ? Shape{} : layout.batch,
              out = layout.batch;
        lhs.push_back(tl ? k : m);
        lhs.push_back(tl ? m : k);
        rhs.push_back(tr ? n : k);
        rhs.push_back(tr ? k : n);
        out.push_back(m);
        out.push_back(n);
        std::string attrs = std::string(" {transpose_lhs = ") +
                            (tl ? "true" : "false") +
                            ", transpose_rhs = " + (tr ? "true" : "false") + "}";
        cases.push_back({"Matmul" + layout.name + (tl ? "_TL" : "_NL") +
                             (tr ? "_TR" : "_NR"),
                         {floats(lhs), floats(rhs)},
                         "%y = tg.matmul %a0, %a1" + attrs + " : $0, $1 -> $r",
                         out});
      }
  }
}

void addTransformerCases(std::vector<Case> &cases, std::mt19937 &rng) {
  // embedding: the gradient with respect to the table (indices repeat).
  {
    int64_t vocab = dim(rng, 3, 5), d = dim(rng, 2, 4);
    Shape ids{2, 4};
    Shape out{2, 4, d};
    cases.push_back({"Embedding",
                     {floats({vocab, d}), indices(ids, vocab, rng)},
                     "%y = tg.embedding %a0[%a1] : $0, $1 -> $r",
                     out});
    cases.push_back({"Embedding_rank1_ids",
                     {floats({4, 3}), indices({5}, 4, rng)},
                     "%y = tg.embedding %a0[%a1] : $0, $1 -> $r",
                     {5, 3}});
  }

  // layer_norm and rms_norm over the last dim.
  for (const Shape &in : std::vector<Shape>{{dim(rng, 2, 3), dim(rng, 3, 6)},
                                           {2, 3, 5}}) {
    Shape w{in.back()};
    cases.push_back({"LayerNorm_" + suffix(in),
                     {floats(in), floats(w), floats(w)},
                     "%y = tg.layer_norm %a0, %a1, %a2 {epsilon = 1.0e-5 : "
                     "f64} : $0, $1, $2 -> $r",
                     in});
    cases.push_back({"RmsNorm_" + suffix(in),
                     {floats(in), floats(w)},
                     "%y = tg.rms_norm %a0, %a1 {epsilon = 1.0e-6 : f64} : "
                     "$0, $1 -> $r",
                     in});
  }

  // attention: grouped-query heads, causal and not.
  struct Attn {
    std::string name;
    int64_t hq, hkv;
    bool causal;
  };
  for (const Attn &a : {Attn{"Attention_GQA_causal", 4, 2, true},
                        Attn{"Attention_GQA_noncausal", 4, 2, false},
                        Attn{"Attention_MQA_causal", 3, 1, true},
                        Attn{"Attention_MHA_noncausal", 2, 2, false}}) {
    int64_t b = dim(rng, 1, 2), t = dim(rng, 2, 4), d = dim(rng, 2, 3);
    Shape q{b, a.hq, t, d}, kv{b, a.hkv, t, d};
    cases.push_back({a.name,
                     {floats(q), floats(kv), floats(kv)},
                     std::string("%y = tg.attention %a0, %a1, %a2 {scale = "
                                 "0.7 : f64, causal = ") +
                         (a.causal ? "true" : "false") + "} : $0, $1, $2 -> $r",
                     q});
  }

  // rope, both directions.
  for (bool inverse : {false, true}) {
    Shape in{dim(rng, 1, 2), dim(rng, 1, 2), dim(rng, 2, 4), 2 * dim(rng, 1, 3)};
    cases.push_back({std::string("Rope") + (inverse ? "_inverse" : ""),
                     {floats(in)},
                     std::string("%y = tg.rope %a0 {theta = 100.0 : f64") +
                         (inverse ? ", inverse" : "") + "} : $0",
                     in});
  }

  // rope with Hugging Face's scalings (fixed shapes, so the cases after
  // these draw the same sizes): linear, and llama3 with its three bands
  // (theta 100, head dim 6: wavelengths 6.3 kept, 29 smoothed, 135 divided).
  for (const char *scaling :
       {"scaling_factor = 3.0 : f64",
        "scaling_factor = 8.0 : f64, low_freq_factor = 1.0 : f64, "
        "high_freq_factor = 4.0 : f64, original_max_positions = 64.0 : f64"}) {
    bool llama3 = std::string(scaling).find("low_freq") != std::string::npos;
    Shape in{1, 2, 8, 6};
    cases.push_back({llama3 ? "Rope_llama3" : "Rope_linear",
                     {floats(in)},
                     std::string("%y = tg.rope %a0 {theta = 100.0 : f64, ") +
                         scaling + "} : $0",
                     in});
  }

  // cross_entropy: the gradient with respect to the logits.
  {
    int64_t vocab = dim(rng, 3, 6);
    Shape targets{2, dim(rng, 2, 3)};
    Shape logits = targets;
    logits.push_back(vocab);
    cases.push_back({"CrossEntropy",
                     {floats(logits, -2, 2), indices(targets, vocab, rng)},
                     "%y = tg.cross_entropy %a0, %a1 : $0, $1 -> $r",
                     {}});
    cases.push_back({"CrossEntropy_rank1_targets",
                     {floats({4, 5}, -2, 2), indices({4}, 5, rng)},
                     "%y = tg.cross_entropy %a0, %a1 : $0, $1 -> $r",
                     {}});
  }
}

std::vector<Case> allCases() {
  std::mt19937 rng(20240611);
  std::vector<Case> cases;
  addBinaryCases(cases, rng);
  addUnaryCases(cases, rng);
  addViewCases(cases, rng);
  addReduceCases(cases, rng);
  addMatmulCases(cases, rng);
  addTransformerCases(cases, rng);
  return cases;
}

class OpVjp : public ::testing::TestWithParam<Case> {};

TEST_P(OpVjp, MatchesFiniteDifferences) {
  const Case &c = GetParam();
  // A per-case seed, stable across runs and platforms.
  unsigned seed = 2166136261u;
  for (char ch : c.name)
    seed = (seed ^ unsigned(ch)) * 16777619u;
  checkCase(c, seed);
}

INSTANTIATE_TEST_SUITE_P(
    Autodiff, OpVjp, ::testing::ValuesIn(allCases()),
    [](const ::testing::TestParamInfo<Case> &info) { return info.param.name; });

//===----------------------------------------------------------------------===//
// The sweep itself
//===----------------------------------------------------------------------===//

/// Builds gradients of @f's returned loss for all its arguments; returns the
/// diagnostics when buildGradients fails, "" when it succeeds.
std::string gradientDiagnostics(const std::string &source) {
  Module m(source);
  EXPECT_TRUE(m.module) << m.diagnostics;
  if (!m.module)
    return "";
  mlir::func::FuncOp f = m.func("f");
  auto ret =
      llvm::cast<mlir::func::ReturnOp>(f.getBody().front().getTerminator());
  mlir::OpBuilder builder(ret);
  std::string captured;
  mlir::ScopedDiagnosticHandler handler(
      &m.context, [&](mlir::Diagnostic &diag) {
        captured += diag.str() + "\n";
        return mlir::success();
      });
  auto grads =
      mlir::tg::buildGradients(builder, ret.getOperand(0), f.getArguments());
  return failed(grads) ? captured : "";
}

TEST(AutodiffSweep, ReduceMaxOnLossPathIsNotDifferentiable) {
  std::string diagnostics = gradientDiagnostics(R"(
    func.func @f(%x: tensor<2x3xf64>) -> tensor<f64> {
      %0 = tg.exp %x : tensor<2x3xf64>
      %1 = tg.reduce_max %0 [1] : tensor<2x3xf64> -> tensor<2xf64>
      %2 = tg.reduce_sum %1 [0] : tensor<2xf64> -> tensor<f64>
      return %2 : tensor<f64>
    })");
  EXPECT_NE(diagnostics.find("is not differentiable"), std::string::npos)
      << diagnostics;
  EXPECT_NE(diagnostics.find("reduce_max"), std::string::npos) << diagnostics;
}

TEST(AutodiffSweep, MaxOnLossPathIsNotDifferentiable) {
  std::string diagnostics = gradientDiagnostics(R"(
    func.func @f(%x: tensor<2x3xf64>, %y: tensor<3xf64>) -> tensor<f64> {
      %0 = tg.max %x, %y : tensor<2x3xf64>, tensor<3xf64> -> tensor<2x3xf64>
      %1 = tg.reduce_sum %0 [0, 1] : tensor<2x3xf64> -> tensor<f64>
      return %1 : tensor<f64>
    })");
  EXPECT_NE(diagnostics.find("is not differentiable"), std::string::npos)
      << diagnostics;
  EXPECT_NE(diagnostics.find("tg.max"), std::string::npos) << diagnostics;
}

TEST(AutodiffSweep, NonDifferentiableOpOffTheLossPathIsFine) {
  // reduce_max feeds a value the loss does not use: no error.
  EXPECT_EQ(gradientDiagnostics(R"(
    func.func @f(%x: tensor<2x3xf64>) -> tensor<f64> {
      %0 = tg.reduce_max %x [1] : tensor<2x3xf64> -> tensor<2xf64>
      %1 = tg.reduce_sum %x [0, 1] : tensor<2x3xf64> -> tensor<f64>
      return %1 : tensor<f64>
    })"),
            "");
}

/// loss = sum((x * x + x) * R): x is used three times, so its gradient must
/// accumulate to (2 x + 1) R.
TEST(AutodiffSweep, ValueUsedTwiceAccumulates) {
  Case c{"UsedTwice",
         {floats({3, 4})},
         "%sq = tg.mul %a0, %a0 : $0, $0 -> $r\n"
         "  %y = tg.add %sq, %a0 : $r, $0 -> $r",
         {3, 4}};
  checkCase(c, 7);

  // And against the closed form.
  Module m(buildSource(c));
  ASSERT_TRUE(m.module) << m.diagnostics;
  ASSERT_TRUE(succeeded(m.addGradFunction({0}))) << m.diagnostics;
  std::mt19937 rng(8);
  std::uniform_real_distribution<double> dist(-1, 1);
  Tensor x{{3, 4}, {}}, r{{3, 4}, {}};
  for (int i = 0; i < 12; ++i) {
    x.data.push_back(dist(rng));
    r.data.push_back(dist(rng));
  }
  auto results =
      mlir::tg::eval::evaluate(m.func("grad"), {x, r}, Arithmetic::Float64);
  ASSERT_TRUE(succeeded(results)) << m.diagnostics;
  for (int i = 0; i < 12; ++i)
    EXPECT_NEAR((*results)[1].data[i], (2 * x.data[i] + 1) * r.data[i], 1e-14)
        << "element " << i;
}

/// The checker itself: a perturbed gradient must be rejected.
TEST(AutodiffSweep, CheckerDetectsAWrongGradient) {
  Case c{"Tanh", {floats({3, 4}, -2, 2)}, "%y = tg.tanh %a0 : $0", {3, 4}};
  Module m(buildSource(c));
  ASSERT_TRUE(m.module) << m.diagnostics;
  ASSERT_TRUE(succeeded(m.addGradFunction({0}))) << m.diagnostics;
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> dist(-1, 1);
  Tensor x{{3, 4}, {}}, r{{3, 4}, {}};
  for (int i = 0; i < 12; ++i) {
    x.data.push_back(2 * dist(rng));
    r.data.push_back(dist(rng));
  }
  auto results =
      mlir::tg::eval::evaluate(m.func("grad"), {x, r}, Arithmetic::Float64);
  ASSERT_TRUE(succeeded(results)) << m.diagnostics;
  Tensor analytic = (*results)[1];
  EXPECT_LT(compareWithFiniteDifferences(m.func("f"), {x, r}, 0, analytic)
                .relative,
            1e-6);
  analytic.data[5] *= 1 + 1e-4;
  EXPECT_GT(compareWithFiniteDifferences(m.func("f"), {x, r}, 0, analytic)
                .relative,
            1e-6);
}

/// A value feeding two different ops whose paths rejoin.
TEST(AutodiffSweep, DiamondAccumulates) {
  Case c{"Diamond",
         {floats({2, 3}), floats({3})},
         "%e = tg.exp %a0 : $0\n"
         "  %s = tg.sin %a0 : $0\n"
         "  %m = tg.mul %e, %a1 : $0, $1 -> $r\n"
         "  %y = tg.div %m, %s : $r, $0 -> $r",
         {2, 3}};
  c.inputs[0].lo = 0.5;
  c.inputs[0].hi = 2.5;
  checkCase(c, 9);
}

} // namespace
