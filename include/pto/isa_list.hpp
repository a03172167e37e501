// The one list of PTO tile instructions: X(NAME, FORM, DTYPES).
//
// FORM says how the instruction reads its operands, and so how every table built from this
// list calls it (the run-time table pto::dyn, the Python bindings, the compiler's typed
// opcodes and the block-level interpreter):
//   Binary           dst = src0 op src1, elementwise              (dst, src0, src1)
//   Unary            dst = f(src), elementwise                     (dst, src)
//   Scalar           dst = src op scalar, elementwise              (dst, src, scalar)
//   Ternary          dst = f(src0, src1, src2), elementwise        (dst, src0, src1, src2)
//   RowExpandBinary  dst = src0 op src1 broadcast along rows (src1 is R x 1)
//   ColExpandBinary  dst = src0 op src1 broadcast along columns (src1 is 1 x C)
//   RowReduce        dst (R x 1) = reduction of each row of src    (dst, src)
//   ColReduce        dst (1 x C) = reduction of each column of src (dst, src)
//   Expand           dst = src broadcast (R x 1 or 1 x C into R x C) (dst, src)
//   Move             dst = a copy / transpose / reshape of src     (dst, src)
//   Concat           dst = src0 and src1 side by side              (dst, src0, src1)
//   Special          an operand list of its own (memory, cube, compare, convert, index, ...)
// DTYPES is the class of element types it accepts: F floating, I integer, N = F + I,
// B = I + bool, A = all (see docs/isa.md).
//
// The elementwise math instructions are listed apart, with the element function that defines
// them, because every layer generates them from that name alone: pto::elem::FN is the reference
// semantics (pto::ref::NAME), pto::simd::math::FN the vector form that the fast instruction and
// the generated kernels' fused loops call (IMPL = Vec), or pto::elem::FN element by element where
// no vector form pays (IMPL = Elem); the compiler's tensor op of the same name lowers to it.
//   PTO_MATH_UNARY:  M(X, NAME, DTYPES, FN, IMPL)            dst = FN(src)
//   PTO_MATH_BINARY: M(X, NAME, SNAME, DTYPES, FN, IMPL)     dst = FN(src0, src1); SNAME is the
//                    tile-scalar form dst = FN(src, scalar) (and FN(scalar, src) scalar-first)
// Adding one is one line here, FN in pto/elem_math.hpp (and pto/simd_math.hpp for Vec), its
// Python name in python/pypto/ops.py and a test (docs/adding-an-op.md).
#pragma once

#include <cstdint>

#define PTO_MATH_UNARY(M, X)                                                                             \
  M(X, TLOG, F, log, Vec) M(X, TLOG2, F, log2, Vec) M(X, TLOG10, F, log10, Vec)                         \
  M(X, TLOG1P, F, log1p, Vec) M(X, TEXP2, F, exp2, Vec) M(X, TEXPM1, F, expm1, Vec)                     \
  M(X, TSIN, F, sin, Vec) M(X, TCOS, F, cos, Vec) M(X, TTAN, F, tan, Vec) M(X, TASIN, F, asin, Vec)     \
  M(X, TACOS, F, acos, Vec) M(X, TATAN, F, atan, Vec) M(X, TSINH, F, sinh, Vec)                         \
  M(X, TCOSH, F, cosh, Vec) M(X, TTANH, F, tanh, Vec) M(X, TASINH, F, asinh, Vec)                       \
  M(X, TACOSH, F, acosh, Vec) M(X, TATANH, F, atanh, Vec) M(X, TERF, F, erf, Vec)                       \
  M(X, TERFC, F, erfc, Vec) M(X, TCBRT, F, cbrt, Vec) M(X, TFLOOR, F, floor, Vec)                       \
  M(X, TCEIL, F, ceil, Vec) M(X, TRINT, F, rint, Vec) M(X, TTRUNC, F, trunc, Vec)                       \
  M(X, TSIGN, N, sign, Vec)

#define PTO_MATH_BINARY(M, X)                                                                            \
  M(X, TPOW, TPOWS, N, pow, Vec) M(X, TATAN2, TATAN2S, F, atan2, Vec)                                   \
  M(X, THYPOT, THYPOTS, F, hypot, Vec) M(X, TCOPYSIGN, TCOPYSIGNS, F, copysign, Vec)                    \
  M(X, TFLOORDIV, TFLOORDIVS, N, floor_div, Elem) M(X, TMOD, TMODS, N, remainder, Elem)                \
  M(X, TGCD, TGCDS, I, gcd, Elem)

// The math lists as entries of the main list.
#define PTO_MATH_UNARY_ENTRY(X, NAME, DTYPES, FN, IMPL) X(NAME, Unary, DTYPES)
#define PTO_MATH_BINARY_ENTRY(X, NAME, SNAME, DTYPES, FN, IMPL) X(NAME, Binary, DTYPES) X(SNAME, Scalar, DTYPES)

#define PTO_INSTRUCTIONS(X)                                                                            \
  /* memory */                                                                                         \
  X(TLOAD, Special, A) X(TSTORE, Special, A) X(TPREFETCH, Special, A) X(MGATHER, Special, A)           \
  X(MSCATTER, Special, A)                                                                              \
  /* elementwise */                                                                                    \
  X(TADD, Binary, N) X(TSUB, Binary, N) X(TMUL, Binary, N) X(TDIV, Binary, N) X(TMAX, Binary, N)       \
  X(TMIN, Binary, N) X(TREM, Binary, N) X(TAND, Binary, B) X(TOR, Binary, B) X(TXOR, Binary, B)        \
  X(TSHL, Binary, I) X(TSHR, Binary, I) X(TPRELU, Binary, N)                                           \
  X(TABS, Unary, N) X(TNEG, Unary, N) X(TRELU, Unary, N) X(TNOT, Unary, B) X(TEXP, Unary, F)           \
  X(TSQRT, Unary, F) X(TRSQRT, Unary, F) X(TRECIP, Unary, F)                                           \
  PTO_MATH_UNARY(PTO_MATH_UNARY_ENTRY, X) PTO_MATH_BINARY(PTO_MATH_BINARY_ENTRY, X)                    \
  X(TADDS, Scalar, N) X(TSUBS, Scalar, N) X(TMULS, Scalar, N) X(TDIVS, Scalar, N) X(TMAXS, Scalar, N)  \
  X(TMINS, Scalar, N) X(TREMS, Scalar, N) X(TANDS, Scalar, B) X(TORS, Scalar, B) X(TXORS, Scalar, B)   \
  X(TSHLS, Scalar, I) X(TSHRS, Scalar, I) X(TLRELU, Scalar, N) X(TAXPY, Special, N)                    \
  X(TEXPANDS, Special, A)                                                                              \
  X(TADDC, Ternary, N) X(TSUBC, Ternary, N) X(TFUSEDMULADD, Ternary, N)                                \
  X(TADDSC, Special, N) X(TSUBSC, Special, N)                                                          \
  X(TCMP, Special, N) X(TCMPS, Special, N) X(TSEL, Special, A) X(TSELS, Special, A)                    \
  X(TCVT, Special, A)                                                                                  \
  /* reductions and broadcasts */                                                                      \
  X(TROWSUM, RowReduce, N) X(TROWPROD, RowReduce, N) X(TROWMAX, RowReduce, N)                          \
  X(TROWMIN, RowReduce, N)                                                                             \
  X(TCOLSUM, ColReduce, N) X(TCOLPROD, ColReduce, N) X(TCOLMAX, ColReduce, N)                          \
  X(TCOLMIN, ColReduce, N)                                                                             \
  X(TROWARGMAX, Special, N) X(TROWARGMIN, Special, N) X(TCOLARGMAX, Special, N) X(TCOLARGMIN, Special, N)  \
  X(TROWCUMSUM, Special, N) X(TROWCUMPROD, Special, N) X(TCOLCUMSUM, Special, N)                        \
  X(TCOLCUMPROD, Special, N) X(TROWTOPK, Special, N) X(TROWTOPKIDX, Special, N) X(TCOLGATHER, Special, A) \
  X(TROWEXPAND, Expand, A) X(TCOLEXPAND, Expand, A)                                                    \
  X(TROWEXPANDADD, RowExpandBinary, N) X(TROWEXPANDSUB, RowExpandBinary, N)                            \
  X(TROWEXPANDMUL, RowExpandBinary, N) X(TROWEXPANDDIV, RowExpandBinary, N)                            \
  X(TROWEXPANDMAX, RowExpandBinary, N) X(TROWEXPANDMIN, RowExpandBinary, N)                            \
  X(TROWEXPANDEXPDIF, RowExpandBinary, F)                                                              \
  X(TCOLEXPANDADD, ColExpandBinary, N) X(TCOLEXPANDSUB, ColExpandBinary, N)                            \
  X(TCOLEXPANDMUL, ColExpandBinary, N) X(TCOLEXPANDDIV, ColExpandBinary, N)                            \
  X(TCOLEXPANDMAX, ColExpandBinary, N) X(TCOLEXPANDMIN, ColExpandBinary, N)                            \
  X(TCOLEXPANDEXPDIF, ColExpandBinary, F)                                                              \
  /* cube */                                                                                           \
  X(TMATMUL, Special, A) X(TMATMUL_ACC, Special, A) X(TMATMUL_BIAS, Special, A) X(TGEMV, Special, A)   \
  /* movement, index, sort, quantization */                                                            \
  X(TMOV, Move, A) X(TEXTRACT, Special, A) X(TINSERT, Special, A) X(TTRANS, Move, A)                   \
  X(TRESHAPE, Move, A) X(TFILLPAD, Special, A) X(TCONCAT, Concat, A)                                   \
  X(TGATHER, Special, A) X(TSCATTER, Special, A) X(TCI, Special, I) X(TTRI, Special, A)                \
  X(TSORT32, Special, N) X(TMRGSORT, Special, N) X(TQUANT, Special, F) X(TDEQUANT, Special, I)         \
  /* cube <-> vector channels */                                                                       \
  X(TPUSH, Special, A) X(TPOP, Special, A)

namespace pto::isa {

enum class Form : uint8_t {
  Binary,
  Unary,
  Scalar,
  Ternary,
  RowExpandBinary,
  ColExpandBinary,
  RowReduce,
  ColReduce,
  Expand,
  Move,
  Concat,
  Special
};

/// Element-type classes: F floating, I integer, N = F + I, B = I + bool, A = all.
enum class Dtypes : uint8_t { F, I, N, B, A };

/// Every instruction, in list order.
enum class Op : uint16_t {
#define PTO_ISA_ENUM(NAME, FORM, DTYPES) NAME,
  PTO_INSTRUCTIONS(PTO_ISA_ENUM)
#undef PTO_ISA_ENUM
};

constexpr const char* form_name(Form f) {
  constexpr const char* names[] = {"Binary",    "Unary",     "Scalar", "Ternary", "RowExpandBinary", "ColExpandBinary",
                                   "RowReduce", "ColReduce", "Expand", "Move",    "Concat",          "Special"};
  return names[static_cast<int>(f)];
}

struct Info {
  const char* name;
  Form form;
  Dtypes dtypes;
};

inline constexpr Info kInfo[] = {
#define PTO_ISA_INFO(NAME, FORM, DTYPES) {#NAME, Form::FORM, Dtypes::DTYPES},
    PTO_INSTRUCTIONS(PTO_ISA_INFO)
#undef PTO_ISA_INFO
};
inline constexpr int kCount = sizeof(kInfo) / sizeof(kInfo[0]);

constexpr const Info& info(Op op) { return kInfo[static_cast<int>(op)]; }

}  // namespace pto::isa
