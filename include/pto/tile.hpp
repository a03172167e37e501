// Static tile types. A Tile owns its storage (the CPU stand-in for an on-chip buffer) and has
// compile-time rows/cols, location, layout and valid dims (each static or DYNAMIC).
#pragma once

#include <limits>
#include <type_traits>

#include "pto/types.hpp"

namespace pto {

// Where a tile lives on the NPU: vector buffer (UB), cube L1, L0A/L0B inputs, L0C accumulator,
// bias and scaling tables. On the CPU it only restricts which instructions accept the tile.
enum class Loc { Vec, Mat, Left, Right, Acc, Bias, Scaling };
// NZ = the cube's fractal layout: 16-row x 32-byte blocks, blocks column-major ("N"), elements
// row-major inside a block ("Z").
enum class Layout { RowMajor, ColMajor, NZ };
// Value that pad (non-valid) elements take when a tile is padded (TFILLPAD on a Tile).
enum class PadValue { None, Zero, Max, Min };

inline constexpr int DYNAMIC = -1;

namespace detail {
// A valid dim: a constant when static, a stored int when DYNAMIC.
template <int V>
struct Dim {
  static constexpr int get() { return V; }
  void set(int v) { PTO_CHECK(v == V, "a static valid dim cannot change"); }
};
template <>
struct Dim<DYNAMIC> {
  int v = 0;
  int get() const { return v; }
  void set(int x) { v = x; }
};
}  // namespace detail

template <class T, int Rows, int Cols, Loc L = Loc::Vec, Layout Lay = Layout::RowMajor,
          int ValidRows = Rows, int ValidCols = Cols, PadValue Pad = PadValue::None>
struct Tile {
  static_assert(Rows > 0 && Cols > 0, "tile dims must be positive");
  static_assert(ValidRows == DYNAMIC || (ValidRows >= 0 && ValidRows <= Rows), "bad ValidRows");
  static_assert(ValidCols == DYNAMIC || (ValidCols >= 0 && ValidCols <= Cols), "bad ValidCols");

  using value_type = T;
  static constexpr int kRows = Rows, kCols = Cols;
  static constexpr Loc kLoc = L;
  static constexpr Layout kLayout = Lay;
  static constexpr PadValue kPad = Pad;
  static constexpr bool kStaticValid = ValidRows != DYNAMIC && ValidCols != DYNAMIC;
  // Fractal block of the NZ layout: 16 rows x 32 bytes.
  static constexpr int kFracRows = 16;
  static constexpr int kFracCols = sizeof(T) <= 32 ? 32 / int(sizeof(T)) : 1;
  static_assert(Lay != Layout::NZ || (Rows % kFracRows == 0 && Cols % kFracCols == 0),
                "NZ tiles must be whole fractals");

  alignas(64) T data[size_t(Rows) * Cols];
  [[no_unique_address]] detail::Dim<ValidRows> vrows;
  [[no_unique_address]] detail::Dim<ValidCols> vcols;

  Tile() = default;
  // Dynamic valid dims are given at construction (or later with set_valid).
  Tile(int valid_rows, int valid_cols) { set_valid(valid_rows, valid_cols); }

  int valid_rows() const { return vrows.get(); }
  int valid_cols() const { return vcols.get(); }
  void set_valid(int r, int c) {
    PTO_CHECK(r >= 0 && r <= Rows && c >= 0 && c <= Cols, "valid dims exceed the tile");
    vrows.set(r);
    vcols.set(c);
  }

  static constexpr size_t offset(int r, int c) {
    if constexpr (Lay == Layout::RowMajor) {
      return size_t(r) * Cols + c;
    } else if constexpr (Lay == Layout::ColMajor) {
      return size_t(c) * Rows + r;
    } else {
      const size_t block = size_t(c / kFracCols) * (Rows / kFracRows) + r / kFracRows;
      return block * (kFracRows * kFracCols) + size_t(r % kFracRows) * kFracCols + c % kFracCols;
    }
  }
  T& at(int r, int c) { return data[offset(r, c)]; }
  const T& at(int r, int c) const { return data[offset(r, c)]; }

  // Row-major tiles are what the instruction implementations take.
  TileRef<T> ref() {
    static_assert(Lay == Layout::RowMajor, "only row-major tiles convert to TileRef; TMOV first");
    return {data, Rows, Cols, Cols, valid_rows(), valid_cols()};
  }
  TileRef<T> ref() const { return const_cast<Tile*>(this)->ref(); }
  operator TileRef<T>() { return ref(); }
  operator TileRef<T>() const { return ref(); }
};

template <class X>
struct is_tile : std::false_type {};
template <class T, int R, int C, Loc L, Layout Y, int VR, int VC, PadValue P>
struct is_tile<Tile<T, R, C, L, Y, VR, VC, P>> : std::true_type {};
template <class X>
inline constexpr bool is_tile_v = is_tile<std::remove_cvref_t<X>>::value;

// Common aliases.
template <class T, int R, int C, int VR = R, int VC = C>
using VecTile = Tile<T, R, C, Loc::Vec, Layout::RowMajor, VR, VC>;
template <class T, int R, int C, int VR = R, int VC = C>
using AccTile = Tile<T, R, C, Loc::Acc, Layout::RowMajor, VR, VC>;

// Passes TileRefs, scalars and modes through; turns Tiles into TileRefs.
template <class X>
decltype(auto) as_ref(X&& x) {
  if constexpr (is_tile_v<X>) return x.ref();
  else return std::forward<X>(x);
}

// Value a PadValue stands for in type T.
template <class T>
T pad_value(PadValue p) {
  if constexpr (std::is_same_v<T, bool>) {
    return p == PadValue::Max;
  } else if constexpr (is_float_v<T>) {
    const float inf = __builtin_huge_valf();
    return T(p == PadValue::Max ? inf : p == PadValue::Min ? -inf : 0.0f);
  } else {
    return p == PadValue::Max ? std::numeric_limits<T>::max()
           : p == PadValue::Min ? std::numeric_limits<T>::lowest() : T(0);
  }
}

}  // namespace pto
