// Element types, run-time dtype tags and the untyped-shape views (TileRef, GlobalRef) that every
// instruction operates on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "pto/half.hpp"

// Shape checks cost one compare per instruction; they throw so an interpreter can report them.
// The message is built out of line (a cold lambda), so a check stays one compare and branch and
// the small check helpers inline into every instruction.
#ifndef PTO_NO_CHECKS
#define PTO_CHECK(cond, msg)                                                            \
  do {                                                                                  \
    if (!(cond)) [[unlikely]]                                                           \
      ::pto::detail::check_failed(__func__, [&] { return std::string(msg); });          \
  } while (0)
#else
#define PTO_CHECK(cond, msg) \
  do {                       \
  } while (0)
#endif

namespace pto {

struct Error : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

namespace detail {
template <class F>
[[noreturn, gnu::noinline, gnu::cold]] void check_failed(const char* func, F&& msg) {
  throw Error(std::string(func) + ": " + msg());
}
}  // namespace detail

// Comparison predicates of TCMP / TCMPS.
enum class CmpMode { EQ, NE, LT, LE, GT, GE };
// TSTORE: plain store or atomic accumulate into global memory.
enum class AtomicMode { NONE, ADD };

// Every element type, once: enumerator, C++ type, name, short (assembler) name, bytes.
// The unsigned types after BOOL keep the older enumerators' values.
#define PTO_DTYPE_LIST(X)                 \
  X(FP32, float, "fp32", "f32", 4)        \
  X(FP16, half, "fp16", "f16", 2)         \
  X(BF16, bfloat16, "bf16", "bf16", 2)    \
  X(INT8, int8_t, "int8", "i8", 1)        \
  X(INT16, int16_t, "int16", "i16", 2)    \
  X(INT32, int32_t, "int32", "i32", 4)    \
  X(INT64, int64_t, "int64", "i64", 8)    \
  X(UINT8, uint8_t, "uint8", "u8", 1)     \
  X(BOOL, bool, "bool", "i1", 1)          \
  X(UINT16, uint16_t, "uint16", "u16", 2) \
  X(UINT32, uint32_t, "uint32", "u32", 4) \
  X(UINT64, uint64_t, "uint64", "u64", 8)

enum class DType {
#define PTO_DTYPE_ENUM(E, T, NAME, SHORT, BYTES) E,
  PTO_DTYPE_LIST(PTO_DTYPE_ENUM)
#undef PTO_DTYPE_ENUM
};

inline constexpr DType kAllDTypes[] = {
#define PTO_DTYPE_ALL(E, T, NAME, SHORT, BYTES) DType::E,
    PTO_DTYPE_LIST(PTO_DTYPE_ALL)
#undef PTO_DTYPE_ALL
};

template <typename T>
constexpr DType dtype_of() {
#define PTO_DTYPE_OF(E, TY, NAME, SHORT, BYTES) \
  if constexpr (std::is_same_v<T, TY>) return DType::E; \
  else
  PTO_DTYPE_LIST(PTO_DTYPE_OF) { static_assert(!sizeof(T), "not a PTO element type"); }
#undef PTO_DTYPE_OF
}

constexpr const char* dtype_name(DType d) {
  switch (d) {
#define PTO_DTYPE_NAME(E, T, NAME, SHORT, BYTES) \
  case DType::E: return NAME;
    PTO_DTYPE_LIST(PTO_DTYPE_NAME)
#undef PTO_DTYPE_NAME
  }
  return "?";
}

constexpr const char* dtype_short_name(DType d) {
  switch (d) {
#define PTO_DTYPE_SHORT(E, T, NAME, SHORT, BYTES) \
  case DType::E: return SHORT;
    PTO_DTYPE_LIST(PTO_DTYPE_SHORT)
#undef PTO_DTYPE_SHORT
  }
  return "?";
}

constexpr size_t dtype_size(DType d) {
  switch (d) {
#define PTO_DTYPE_SIZE(E, T, NAME, SHORT, BYTES) \
  case DType::E: return BYTES;
    PTO_DTYPE_LIST(PTO_DTYPE_SIZE)
#undef PTO_DTYPE_SIZE
  }
  return 1;
}

template <class T>
struct TypeTag {
  using type = T;
};

// Calls f(TypeTag<T>{}) with the C++ type of a run-time dtype (for interpreters and bindings).
template <class F>
decltype(auto) visit_dtype(DType d, F&& f) {
  switch (d) {
#define PTO_DTYPE_VISIT(E, T, NAME, SHORT, BYTES) \
  case DType::E: return f(TypeTag<T>{});
    PTO_DTYPE_LIST(PTO_DTYPE_VISIT)
#undef PTO_DTYPE_VISIT
  }
  throw Error("visit_dtype: bad dtype");
}

template <class T>
inline constexpr bool is_float_v =
    std::is_floating_point_v<T> || std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;
template <class T>
inline constexpr bool is_int_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;
// The type of the scalar operand of tile-scalar instructions (TADDS, ..., TEXPANDS): float for
// the 16-bit floating types, which compute in float and round once (so x * 1e5 on fp16 is not
// x * inf), the tile's type otherwise.
template <class T>
using scalar_t = std::conditional_t<std::is_same_v<T, half> || std::is_same_v<T, bfloat16>, float, T>;

// A 2-D row-major tile in a buffer: rows x cols allocated, `stride` elements between rows
// (>= cols); instruction semantics are defined on the valid region valid_rows x valid_cols.
template <typename T>
struct TileRef {
  T* data;
  int rows;
  int cols;
  int stride;
  int valid_rows;
  int valid_cols;

  T& at(int r, int c) const { return data[(size_t)r * stride + c]; }
  T* row(int r) const { return data + (size_t)r * stride; }
};

// A global-memory tensor view of up to 5 dims; unused leading dims have shape 1. Strides are in
// elements. As a tile it has rows = shape[0]*...*shape[3] and cols = shape[4].
template <typename T>
struct GlobalRef {
  T* data;
  int64_t shape[5];
  int64_t stride[5];

  int64_t tile_rows() const { return shape[0] * shape[1] * shape[2] * shape[3]; }
  int64_t tile_cols() const { return shape[4]; }
  int64_t numel() const { return tile_rows() * shape[4]; }
  // Address of the element with row-major logical index i (0 <= i < numel()).
  T* at_linear(int64_t i) const { return addr(i / shape[4], i % shape[4]); }
  // Address of element (row r, col c) of the flattened 2-D view.
  T* addr(int64_t r, int64_t c) const {
    const int64_t i3 = r % shape[3], i2 = r / shape[3] % shape[2];
    const int64_t i1 = r / (shape[3] * shape[2]) % shape[1];
    const int64_t i0 = r / (shape[3] * shape[2] * shape[1]);
    return data + i0 * stride[0] + i1 * stride[1] + i2 * stride[2] + i3 * stride[3] + c * stride[4];
  }
};

// A dense row-major 2-D GlobalRef (rows x cols with leading dimension ld).
template <typename T>
GlobalRef<T> make_global_2d(T* data, int64_t rows, int64_t cols, int64_t ld) {
  return GlobalRef<T>{data, {1, 1, 1, rows, cols}, {0, 0, 0, ld, 1}};
}

}  // namespace pto
