// PyPTO's C++ API (CANN PyPTO's names): record a function over Tensors with FUNCTION / LOOP /
// IF / ELSE / UNROLL, compile it with the same recorder, passes, backends and kernel cache as
// the Python frontend, and run it on host buffers.
//
//   #include <pypto/pypto.h>
//   using namespace pypto;
//   Tensor x(DT_FP32, {DYNAMIC, 64}, "x"), y(DT_FP32, {DYNAMIC, 64}, "y");
//   FUNCTION("Scale", {x}, {y}) {
//     LOOP("L0", FunctionType::DYNAMIC_LOOP, i, LoopRange(GetInputShape(x, 0))) {
//       TileShape::Current().SetVecTile({1, 64});
//       Assemble(Mul(View(x, {1, 64}, {i, 0}), Element(DT_FP32, 2.0)), {i, 0}, y);
//     }
//   }
//   Run("Scale", {HostTensor(px, DT_FP32, {n, 64})}, {HostTensor(py, DT_FP32, {n, 64})});
//
// Every op takes the caller's source position (std::source_location, defaulted): errors are
// pypto::UserError with the user's file:line, the op and the shapes, as in Python.
// docs/cpp-api.md is the guide; differences from CANN PyPTO are listed there.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <set>
#include <source_location>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "pypto/data_type.h"
#include "pypto/error.h"
#include "pypto/host_tensor.h"
#include "pypto/symbolic.h"

namespace pypto {

using Loc = std::source_location;

/// A dim whose size is bound by each call (PyPTO's DYNAMIC): `Tensor x(DT_FP32, {DYNAMIC, 64})`.
inline constexpr int64_t DYNAMIC = -1;

enum class FunctionType { EAGER, STATIC, DYNAMIC, DYNAMIC_LOOP, DYNAMIC_LOOP_PATH };
/// Arrays here are row-major: NZ is accepted and recorded, as in Python.
enum class TileOpFormat { TILEOP_ND, TILEOP_NZ };
/// Comparisons of Compare(); the result is DT_BOOL (OutType::BOOL).
enum class OpType { EQ, NE, LT, LE, GT, GE };
enum class OutType { BOOL };

// ---------------------------------------------------------------------------------------------
// Symbolic scalars: dims, loop indices, offsets, elements read from integer inputs.

class SymbolicScalar {
 public:
  SymbolicScalar() : e_(int64_t{0}) {}
  SymbolicScalar(int64_t v) : e_(v) {}  // NOLINT: integers convert implicitly, as in CANN PyPTO
  SymbolicScalar(int v) : e_(static_cast<int64_t>(v)) {}  // NOLINT
  explicit SymbolicScalar(Expr e) : e_(std::move(e)) {}

  const Expr& expr() const { return e_; }
  /// True when the value is known now (no dynamic dim, loop index or read element in it).
  bool IsConcrete() const { return e_.is_const(); }
  /// The value when IsConcrete(); UserError otherwise.
  int64_t Concrete() const;
  std::string Dump() const { return e_.str(); }
  SymbolicScalar Min(const SymbolicScalar& o) const { return SymbolicScalar(pypto::Min(e_, o.e_)); }
  SymbolicScalar Max(const SymbolicScalar& o) const { return SymbolicScalar(pypto::Max(e_, o.e_)); }

 private:
  Expr e_;
};

SymbolicScalar operator+(const SymbolicScalar& a, const SymbolicScalar& b);
SymbolicScalar operator-(const SymbolicScalar& a, const SymbolicScalar& b);
SymbolicScalar operator*(const SymbolicScalar& a, const SymbolicScalar& b);
/// Floor division and modulo (Python's, as for loop bounds and tile counts).
SymbolicScalar operator/(const SymbolicScalar& a, const SymbolicScalar& b);
SymbolicScalar operator%(const SymbolicScalar& a, const SymbolicScalar& b);
SymbolicScalar operator-(const SymbolicScalar& a);
/// Comparisons and logic give 0 or 1: conditions for IF, not C++ bools.
SymbolicScalar operator<(const SymbolicScalar& a, const SymbolicScalar& b);
SymbolicScalar operator<=(const SymbolicScalar& a, const SymbolicScalar& b);
SymbolicScalar operator>(const SymbolicScalar& a, const SymbolicScalar& b);
SymbolicScalar operator>=(const SymbolicScalar& a, const SymbolicScalar& b);
SymbolicScalar operator==(const SymbolicScalar& a, const SymbolicScalar& b);
SymbolicScalar operator!=(const SymbolicScalar& a, const SymbolicScalar& b);
SymbolicScalar operator&&(const SymbolicScalar& a, const SymbolicScalar& b);
SymbolicScalar operator||(const SymbolicScalar& a, const SymbolicScalar& b);
SymbolicScalar operator!(const SymbolicScalar& a);
SymbolicScalar CeilDiv(const SymbolicScalar& a, const SymbolicScalar& b);

/// A typed scalar operand (PyPTO's Element): Add(x, Element(DT_FP32, 0.5)). A plain double or
/// integer converts implicitly and takes the tensor's dtype.
class Element {
 public:
  Element(DataType dtype, double value) : dtype_(dtype), value_(value), typed_(true) {}
  Element(DataType dtype, int64_t value) : dtype_(dtype), value_(static_cast<double>(value)), typed_(true) {}
  Element(DataType dtype, int value) : Element(dtype, static_cast<int64_t>(value)) {}
  Element(double value) : value_(value) {}  // NOLINT
  Element(float value) : value_(value) {}  // NOLINT
  Element(int64_t value) : value_(static_cast<double>(value)) {}  // NOLINT
  Element(int value) : value_(value) {}  // NOLINT
  DataType GetDataType() const { return dtype_; }
  bool HasDataType() const { return typed_; }
  double GetValue() const { return value_; }

 private:
  DataType dtype_ = DataType::FP32;
  double value_ = 0;
  bool typed_ = false;
};

// ---------------------------------------------------------------------------------------------
// Tensors.

namespace detail {
struct TensorImpl;
struct Handles;
}

/// A tensor handle. Made outside FUNCTION it declares a parameter (its dims may be DYNAMIC);
/// inside, PyPTO's intermediate tensor in global memory (write it with Assemble before reading).
/// Ops return new handles; copies share the tensor.
///
/// Assignment is CANN PyPTO's: inside FUNCTION, `out = expr` writes the value into `out` when
/// `out` is one of FUNCTION's outputs or a tensor declared in the body (shape and dtype must
/// match: a UserError at the value's line otherwise); any other handle (an intermediate value,
/// a view, an input, an empty Tensor) is rebound to the value, as CANN rebinds its storage.
class Tensor {
 public:
  Tensor();
  Tensor(const Tensor& other);
  Tensor(Tensor&& other) noexcept;
  Tensor& operator=(const Tensor& other);
  Tensor& operator=(Tensor&& other);
  ~Tensor();
  Tensor(DataType dtype, std::initializer_list<SymbolicScalar> shape, const std::string& name = "",
         TileOpFormat format = TileOpFormat::TILEOP_ND, Loc loc = Loc::current());
  Tensor(DataType dtype, const std::vector<int64_t>& shape, const std::string& name = "",
         TileOpFormat format = TileOpFormat::TILEOP_ND, Loc loc = Loc::current());
  Tensor(DataType dtype, const std::vector<SymbolicScalar>& shape, const std::string& name = "",
         TileOpFormat format = TileOpFormat::TILEOP_ND, Loc loc = Loc::current());

  DataType GetDataType() const;
  /// The shape; DYNAMIC (-1) for a dim known only when the function is called.
  std::vector<int64_t> GetShape() const;
  int64_t GetShape(int axis) const;
  /// The shape as symbolic scalars (a dynamic dim is its symbol; a window's valid extent).
  std::vector<SymbolicScalar> GetValidShape() const;
  uint64_t Dim() const;
  std::string GetName() const;
  TileOpFormat Format() const;
  bool IsEmpty() const { return impl_ == nullptr; }
  /// CANN's accessors of a tensor's storage: `t.GetStorage()->Datatype()` (a handle stands for
  /// its storage here).
  const Tensor* GetStorage() const { return this; }
  DataType Datatype() const { return GetDataType(); }

  const std::shared_ptr<detail::TensorImpl>& impl() const { return impl_; }
  explicit Tensor(std::shared_ptr<detail::TensorImpl> impl);

 private:
  friend struct detail::Handles;  // IF / ELSE rebind handles (api/handles.cpp)
  void Assign(const std::shared_ptr<detail::TensorImpl>& value);
  std::shared_ptr<detail::TensorImpl> impl_;
};

/// Dim `dim` of a parameter as a symbol (bound by each call for a DYNAMIC dim).
SymbolicScalar GetInputShape(const Tensor& t, int dim, Loc loc = Loc::current());
std::vector<SymbolicScalar> GetInputShape(const Tensor& t, Loc loc = Loc::current());
/// One element of an integer input as a symbol, read when the program gets there (sequence
/// lengths, page tables): usable in loop bounds, offsets and IF.
SymbolicScalar GetTensorData(const Tensor& t, const std::vector<SymbolicScalar>& index, Loc loc = Loc::current());
/// 1 on the first (last) iteration of a unit-step loop from `begin` (to `end`), else 0.
SymbolicScalar IsLoopBegin(const SymbolicScalar& index, const SymbolicScalar& begin);
SymbolicScalar IsLoopEnd(const SymbolicScalar& index, const SymbolicScalar& end);

// ---------------------------------------------------------------------------------------------
// Ops. Each records into the function being recorded (UserError outside FUNCTION).

// Elementwise math of one tensor (the registry's unary ops; -0 and NaN follow numpy for fp32).
#define PYPTO_API_UNARY(X)                                                                            \
  X(Exp, exp) X(Abs, abs) X(Neg, neg) X(Sqrt, sqrt) X(Rsqrt, rsqrt) X(Reciprocal, reciprocal)       \
  X(Relu, relu) X(BitwiseNot, bitwise_not) X(Ln, log) X(Log, log) X(Log2, log2) X(Log10, log10)     \
  X(Log1p, log1p) X(Exp2, exp2) X(Expm1, expm1) X(Sin, sin) X(Cos, cos) X(Tan, tan) X(Asin, asin)   \
  X(Acos, acos) X(Atan, atan) X(Sinh, sinh) X(Cosh, cosh) X(Tanh, tanh) X(ASinh, asinh)             \
  X(ACosh, acosh) X(Atanh, atanh) X(Erf, erf) X(Erfc, erfc) X(Cbrt, cbrt) X(Floor, floor)          \
  X(Ceil, ceil) X(Rint, rint) X(Trunc, trunc) X(Sign, sign)
// Elementwise ops of two operands with broadcasting; the second may be an Element.
#define PYPTO_API_BINARY(X)                                                                           \
  X(Add, add) X(Sub, sub) X(Mul, mul) X(Div, div) X(Maximum, maximum) X(Minimum, minimum)          \
  X(Fmod, fmod) X(BitwiseAnd, bitwise_and) X(BitwiseOr, bitwise_or) X(BitwiseXor, bitwise_xor)     \
  X(BitwiseLeftShift, bitwise_left_shift) X(BitwiseRightShift, bitwise_right_shift) X(Pow, pow)    \
  X(Atan2, atan2) X(Hypot, hypot) X(CopySign, copysign) X(FloorDiv, floor_div)                     \
  X(Remainder, remainder) X(Gcd, gcd)
// Reductions along one axis.
#define PYPTO_API_REDUCE(X) X(Sum, sum) X(Amax, amax) X(Amin, amin) X(Prod, prod) X(ArgMax, argmax) X(ArgMin, argmin)

#define PYPTO_DECLARE_UNARY(NAME, OP) Tensor NAME(const Tensor& x, Loc loc = Loc::current());
#define PYPTO_DECLARE_BINARY(NAME, OP)                                                  \
  Tensor NAME(const Tensor& x, const Tensor& y, Loc loc = Loc::current());             \
  Tensor NAME(const Tensor& x, const Element& y, Loc loc = Loc::current());            \
  Tensor NAME(const Element& x, const Tensor& y, Loc loc = Loc::current());
#define PYPTO_DECLARE_REDUCE(NAME, OP) \
  Tensor NAME(const Tensor& x, int axis = -1, bool keepDim = false, Loc loc = Loc::current());
PYPTO_API_UNARY(PYPTO_DECLARE_UNARY)
PYPTO_API_BINARY(PYPTO_DECLARE_BINARY)
PYPTO_API_REDUCE(PYPTO_DECLARE_REDUCE)
#undef PYPTO_DECLARE_UNARY
#undef PYPTO_DECLARE_BINARY
#undef PYPTO_DECLARE_REDUCE

Tensor operator+(const Tensor& x, const Tensor& y);
Tensor operator-(const Tensor& x, const Tensor& y);
Tensor operator*(const Tensor& x, const Tensor& y);
Tensor operator/(const Tensor& x, const Tensor& y);
Tensor operator+(const Tensor& x, double y);
Tensor operator-(const Tensor& x, double y);
Tensor operator*(const Tensor& x, double y);
Tensor operator/(const Tensor& x, double y);
Tensor operator-(const Tensor& x);

/// x op y elementwise as DT_BOOL.
Tensor Compare(const Tensor& x, const Tensor& y, OpType op, OutType mode = OutType::BOOL, Loc loc = Loc::current());
Tensor Compare(const Tensor& x, const Element& y, OpType op, OutType mode = OutType::BOOL, Loc loc = Loc::current());
/// condition ? x : y (a DT_BOOL condition; broadcasting).
Tensor Where(const Tensor& condition, const Tensor& x, const Tensor& y, Loc loc = Loc::current());
Tensor Where(const Tensor& condition, const Tensor& x, const Element& y, Loc loc = Loc::current());
Tensor Where(const Tensor& condition, const Element& x, const Tensor& y, Loc loc = Loc::current());
Tensor LogicalNot(const Tensor& x, Loc loc = Loc::current());
Tensor LogicalAnd(const Tensor& x, const Tensor& y, Loc loc = Loc::current());
/// CANN PyPTO's rounding of Cast (its names and values). CAST_NONE is the conversion's default:
/// truncation from a float into an integer (torch's), to nearest even otherwise; from a float to
/// the same dtype the others round to an integer. CAST_ODD takes the default (not on a CPU).
enum CastMode { CAST_NONE = 0, CAST_RINT = 1, CAST_ROUND = 2, CAST_FLOOR = 3, CAST_CEIL = 4, CAST_TRUNC = 5, CAST_ODD = 6 };
/// Overflow into an integer: it always saturates here (NaN gives 0), which ON asks.
enum class SaturationMode { OFF, ON };
Tensor Cast(const Tensor& x, DataType dtype, Loc loc = Loc::current());
Tensor Cast(const Tensor& x, DataType dtype, CastMode mode, SaturationMode satmode = SaturationMode::OFF,
            Loc loc = Loc::current());
/// A tensor of `shape` holding `value` (in `dtype`).
Tensor Full(const Element& value, DataType dtype, const std::vector<SymbolicScalar>& shape, Loc loc = Loc::current());
/// x broadcast to `shape` (dims of 1 repeat), materialized.
Tensor Expand(const Tensor& x, const std::vector<SymbolicScalar>& shape, Loc loc = Loc::current());
/// CANN's row reductions of the last dim, broadcast back to x's shape.
Tensor RowMaxExpand(const Tensor& x, Loc loc = Loc::current());
Tensor RowSumExpand(const Tensor& x, Loc loc = Loc::current());

/// The window [offsets, offsets + shape) of x; with valid_shape, of that shape (tails).
Tensor View(const Tensor& x, const std::vector<int64_t>& shape, const std::vector<SymbolicScalar>& offsets,
            Loc loc = Loc::current());
Tensor View(const Tensor& x, const std::vector<int64_t>& shape, const std::vector<SymbolicScalar>& validShape,
            const std::vector<SymbolicScalar>& offsets, Loc loc = Loc::current());
/// dst[offsets...] = src.
void Assemble(const Tensor& src, const std::vector<SymbolicScalar>& offsets, Tensor& dst, Loc loc = Loc::current());
/// x in another shape of as many elements (row-major), no copy.
Tensor Reshape(const Tensor& x, const std::vector<SymbolicScalar>& shape, Loc loc = Loc::current());
/// Result dim i is input dim perm[i].
Tensor Permute(const Tensor& x, const std::vector<int>& perm, Loc loc = Loc::current());
/// x with dims perm[0] and perm[1] swapped (CANN PyPTO's Transpose of two axes).
Tensor Transpose(const Tensor& x, const std::vector<int>& perm, Loc loc = Loc::current());
Tensor Unsqueeze(const Tensor& x, int dim, Loc loc = Loc::current());
Tensor Squeeze(const Tensor& x, const std::vector<int>& dims = {}, Loc loc = Loc::current());

namespace detail {
template <class T>
using IfIntegral = std::enable_if_t<std::is_integral_v<T>, int>;
template <class T>
std::vector<SymbolicScalar> Dims(const std::vector<T>& v) {
  return std::vector<SymbolicScalar>(v.begin(), v.end());
}
}  // namespace detail

// The shape as a vector of integers (what GetShape() returns), as CANN's signatures take it.
template <class T, detail::IfIntegral<T> = 0>
Tensor Full(const Element& value, DataType dtype, const std::vector<T>& shape, Loc loc = Loc::current()) {
  return Full(value, dtype, detail::Dims(shape), loc);
}
template <class T, detail::IfIntegral<T> = 0>
Tensor Reshape(const Tensor& x, const std::vector<T>& shape, Loc loc = Loc::current()) {
  return Reshape(x, detail::Dims(shape), loc);
}
template <class T, detail::IfIntegral<T> = 0>
Tensor Expand(const Tensor& x, const std::vector<T>& shape, Loc loc = Loc::current()) {
  return Expand(x, detail::Dims(shape), loc);
}

namespace Matrix {
/// a @ b on the cube unit: fp32, bf16/fp16 (fp32 accumulation) or int8 (int32); `outType` is the
/// result's dtype. Batch dims broadcast. Tiles: TileShape::Current().SetCubeTile(...).
Tensor Matmul(DataType outType, const Tensor& a, const Tensor& b, bool aTrans = false, bool bTrans = false,
              Loc loc = Loc::current());
}  // namespace Matrix

// ---------------------------------------------------------------------------------------------
// Tiling and options.

class TileShape {
 public:
  /// The tile shapes of the function being recorded (outside FUNCTION: the defaults for the next).
  static TileShape& Current();
  /// The vec tile for the following vector ops: one entry per tensor dim (or more).
  void SetVecTile(const std::vector<int64_t>& tile, Loc loc = Loc::current());
  template <class... Args>
  void SetVecTile(int64_t first, Args... rest) {
    SetVecTile(std::vector<int64_t>{first, static_cast<int64_t>(rest)...});
  }
  /// Cube tiles {L0, L1} along m, k and n for the following matmuls.
  void SetCubeTile(const std::vector<int64_t>& m, const std::vector<int64_t>& k, const std::vector<int64_t>& n,
                   bool enableSplitK = false, Loc loc = Loc::current());
  std::vector<int64_t> GetVecTile() const;
};

namespace config {
/// Pass options: "machine" ("cpu", "a2a3", "a5"), "reciprocal_division" (bool) act here; PyPTO's NPU
/// partition keys are accepted and recorded. Unknown keys are a UserError.
void SetPassOption(const std::string& key, const std::string& value);
void SetPassOption(const std::string& key, int64_t value);
/// Runtime options: "workers" (int), "run_mode" ("cpu" or "interp"), "sched_mode" ("fifo",
/// "lifo"), "timeout" (seconds); PyPTO's NPU scheduler keys are accepted and recorded.
void SetRuntimeOption(const std::string& key, const std::string& value);
void SetRuntimeOption(const std::string& key, int64_t value);
/// Debug options: "dump_dir" (string), "dump_passes" (0/1), "compile_debug_mode" (0/1).
void SetDebugOption(const std::string& key, const std::string& value);
void SetDebugOption(const std::string& key, int64_t value);
/// Back to the defaults.
void ResetOptions();
}  // namespace config

// ---------------------------------------------------------------------------------------------
// Running.

/// A compiled function: run it again and again on new buffers (kernels compile on the first run
/// and stay in the on-disk cache, as in Python).
class CompiledFunction {
 public:
  /// inputs then outputs, in FUNCTION's order; outputs are written in place.
  void Run(const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& outputs) const;
  /// The IR after each pass, and the generated kernels (for inspection).
  std::string TensorGraph() const;
  std::string BlockGraph() const;
  std::string KernelSource() const;
  int NumKernels() const;

  struct Impl;
  explicit CompiledFunction(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<Impl> impl_;
};

/// Compiles the function recorded as `name` (with the options in force now).
CompiledFunction Compile(const std::string& name, Loc loc = Loc::current());
/// Compiles (once per options) and runs the function recorded as `name`.
void Run(const std::string& name, const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& outputs,
         Loc loc = Loc::current());
/// The names of the recorded functions.
std::vector<std::string> FunctionNames();

// ---------------------------------------------------------------------------------------------
// Recording: the scopes behind the macros.

namespace detail {

/// FUNCTION(name, {inputs}, {outputs}): begins recording on construction; the body runs once
/// (range-for over this object); the function is registered when the body ends.
class RecordFunc {
 public:
  RecordFunc(const std::string& name, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
             Loc loc = Loc::current());
  RecordFunc(const std::string& name, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
             const std::vector<std::pair<Tensor, Tensor>>& inplace, Loc loc = Loc::current());
  ~RecordFunc();
  RecordFunc(const RecordFunc&) = delete;
  RecordFunc& operator=(const RecordFunc&) = delete;

  struct End {};
  struct Iterator {
    RecordFunc* f;
    bool operator!=(End) const;
    void operator++();
    int operator*() const { return 0; }
  };
  Iterator begin() { return {this}; }
  End end() { return {}; }

 private:
  void Finish();
  std::string name_;
  std::vector<Tensor> params_;
  Loc loc_;
  bool entered_ = false, done_ = false;
  int depth_;
};

struct LoopRangeData;

}  // namespace detail

/// The range of LOOP: [begin, end) by step.
class LoopRange {
 public:
  LoopRange(const SymbolicScalar& begin, const SymbolicScalar& end, const SymbolicScalar& step)
      : begin_(begin), end_(end), step_(step) {}
  LoopRange(const SymbolicScalar& begin, const SymbolicScalar& end) : LoopRange(begin, end, 1) {}
  explicit LoopRange(const SymbolicScalar& end) : LoopRange(0, end, 1) {}
  const SymbolicScalar& Begin() const { return begin_; }
  const SymbolicScalar& End() const { return end_; }
  const SymbolicScalar& Step() const { return step_; }

 private:
  SymbolicScalar begin_, end_, step_;
};

namespace detail {

/// LOOP(name, type, index, range[, unrollList]): a runtime loop. With an unroll list the body is
/// recorded once per factor k (largest first, 1 always added): UNROLL(k) selects its code, and
/// the loops of all factors cover the range greedily, as Python's pypto.loop_unroll.
class RecordLoop {
 public:
  RecordLoop(const std::string& name, FunctionType type, const std::string& index_name, const LoopRange& range,
             const std::set<int>& unrollList = {}, bool submitBeforeLoop = false, bool parallel = false,
             Loc loc = Loc::current());
  ~RecordLoop();
  RecordLoop(const RecordLoop&) = delete;
  RecordLoop& operator=(const RecordLoop&) = delete;

  struct End {};
  struct Iterator {
    RecordLoop* l;
    bool operator!=(End) const;
    void operator++();
    const SymbolicScalar& operator*() const;
  };
  Iterator begin();
  End end() { return {}; }
  /// The unroll factor of the body being recorded (UNROLL's test).
  static bool MatchUnrollTimes(int times);

 private:
  bool Next();  // opens the loop of the next factor; false when none is left
  void Close();
  std::string name_, index_name_;
  LoopRange range_;
  std::vector<int> factors_;
  size_t next_ = 0;
  SymbolicScalar begin_, index_;
  bool open_ = false, unrolled_ = false;
  int factor_ = 1;
  Loc loc_;
};

struct BranchMerge;

/// IF(cond): the body is a runtime branch taken when cond != 0; ELSE records the other one,
/// starting from the handles as they were before the IF. A handle that either body rebinds
/// (`r = Sub(r, a)`) is, after the IF / ELSE, a tensor that each path writes its value into
/// (a UserError when used if the paths disagree in shape or dtype).
class RecordBranch {
 public:
  /// IF(cond) with else_of == nullptr; ELSE with the IF closed last.
  RecordBranch(const SymbolicScalar& cond, std::shared_ptr<BranchMerge> else_of, Loc loc);
  ~RecordBranch();
  RecordBranch(const RecordBranch&) = delete;
  RecordBranch& operator=(const RecordBranch&) = delete;
  /// true once, when the body runs: always for a runtime condition; for one known now (a C++
  /// bool, a constant), as C++'s `if` would.
  bool Once() { return !std::exchange(ran_, true) && run_; }
  /// The IF closed last on this thread (for ELSE): UserError when there is none.
  static std::shared_ptr<BranchMerge> LastIf(Loc loc);

 private:
  bool ran_ = false, run_ = true, is_else_ = false;
  int reopened_ = 0;  // scopes of an ELSE IF chain opened again around a final ELSE
  std::shared_ptr<BranchMerge> merge_;
  Loc loc_;
  int uncaught_ = 0;
};

}  // namespace detail

namespace detail {
/// Where generated kernels find the PTO headers (the installed package's include directory).
bool SetPackageIncludeDir(const char* dir);
#ifdef PYPTO_PACKAGE_INCLUDE_DIR
// Set by pyptoConfig.cmake for programs linking pypto::pypto: registered before main runs.
inline const bool kPackageIncludeDirSet = SetPackageIncludeDir(PYPTO_PACKAGE_INCLUDE_DIR);
#endif
}  // namespace detail

#define PYPTO_CAT_(a, b) a##b
#define PYPTO_CAT(a, b) PYPTO_CAT_(a, b)

/// FUNCTION(name, {inputs}, {outputs}) { body }: records a function (its tensors: the inputs,
/// then the outputs, which it writes in place). An optional fourth argument is PyPTO's list of
/// in-place pairs (accepted; an output is always written in place here).
#define FUNCTION(name, ...) \
  for ([[maybe_unused]] int PYPTO_CAT(pypto_func_, __LINE__) : ::pypto::detail::RecordFunc(name, __VA_ARGS__))

/// LOOP(name, FunctionType::DYNAMIC_LOOP, i, LoopRange(begin, end, step)[, unrollList]) { body }:
/// a runtime loop; `i` is its index (a SymbolicScalar) in the body.
#define LOOP(name, funcType, index, ...) \
  for (const ::pypto::SymbolicScalar& index : ::pypto::detail::RecordLoop(name, funcType, #index, __VA_ARGS__))

/// IF(cond) { ... } ELSE { ... }: a runtime branch on a SymbolicScalar condition; both bodies
/// are recorded, the one taken is decided when the program runs. `ELSE IF(c)` nests. Handles
/// rebound in the bodies merge after it (RecordBranch).
#define IF(cond)                                                                                      \
  for (::pypto::detail::RecordBranch PYPTO_CAT(pypto_if_, __LINE__)(cond, nullptr,                    \
                                                                    ::std::source_location::current()); \
       PYPTO_CAT(pypto_if_, __LINE__).Once();)
#define ELSE                                                                                             \
  for (::pypto::detail::RecordBranch PYPTO_CAT(pypto_else_, __LINE__)(                                   \
           0, ::pypto::detail::RecordBranch::LastIf(::std::source_location::current()),                   \
           ::std::source_location::current());                                                            \
       PYPTO_CAT(pypto_else_, __LINE__).Once();)

/// UNROLL(k) { ... }: inside a LOOP with an unroll list, the code of the body for factor k (the
/// index then steps by k: the body handles iterations i .. i + k - 1).
#define UNROLL(times) if (::pypto::detail::RecordLoop::MatchUnrollTimes(times))
#define UNROLL_DEFAULT UNROLL(1)

}  // namespace pypto
