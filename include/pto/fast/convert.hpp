// Fast TCVT, TQUANT, TDEQUANT: vectorized float <-> fp16/bf16 and small-int -> float conversions;
// every other pair (directed modes to floating types, int -> bf16, ...) runs the reference.
#pragma once

#include "pto/fast/elementwise.hpp"
#include "pto/fast/movement.hpp"
#include "pto/ref/complex.hpp"
#include "pto/ref/convert.hpp"

namespace pto {
inline namespace PTO_ISA_NS {

template <class D, class S>
void TCVT(TileRef<D> dst, TileRef<S> src, RoundMode mode = RoundMode::RINT) {
  // Integers of at most 24 bits are exact in float, so int -> float -> fp16 rounds only once.
  constexpr bool small_int = is_int_v<S> && std::numeric_limits<S>::digits <= 24;
  if constexpr (std::is_same_v<D, S>) {
    TMOV(dst, src);
  } else if constexpr (is_float_v<D> && (is_float_v<S> || small_int)) {
    if (mode == RoundMode::RINT || std::is_same_v<D, float>) {
      if constexpr (is_float_v<S>) fast::map(dst, fast::Identity{}, src);
      else fast::map(dst, [](S x) { return float(x); }, src);
      return;
    }
    if constexpr (std::is_same_v<D, bfloat16> && std::is_same_v<S, float>) {
      if (mode == RoundMode::ROUND) {  // the language's default cast: ties away, one bit trick
        fast::map(dst, [](float x) { return bfloat16::from_bits(detail::float_to_bf16_round(x)); }, src);
        return;
      }
    }
    ref::TCVT(dst, src, mode);
  } else if constexpr (is_int_v<D> && is_float_v<S>) {
    fast::map(dst, [mode](float x) { return elem::convert<D>(x, mode); }, src);
  } else {
    ref::TCVT(dst, src, mode);
  }
}

// TQUANT: per row, q = saturate(round(fmaf(x, scale, offset))). For 8/16-bit targets the rounding
// and the clamp are exact in float, so the loop vectorizes and equals the reference.
template <class D, class S>
void TQUANT(TileRef<D> dst, TileRef<S> src, TileRef<float> scale, float offset = 0.0f,
            RoundMode mode = RoundMode::RINT) {
  static_assert(is_int_v<D> && is_float_v<S>, "TQUANT: float -> integer");
  ref::detail::check_tile(dst, "dst");
  ref::detail::check_covers(src, dst.valid_rows, dst.valid_cols, "src");
  ref::detail::check_covers(scale, dst.valid_rows, 1, "scale");
  if constexpr (sizeof(D) > 2) {
    return ref::TQUANT(dst, src, scale, offset, mode);
  } else {
    if (mode == RoundMode::ROUND) return ref::TQUANT(dst, src, scale, offset, mode);
    constexpr float lo = float(std::numeric_limits<D>::min());
    constexpr float hi = float(std::numeric_limits<D>::max());
    for (int r = 0; r < dst.valid_rows; ++r) {
      const float k = scale.at(r, 0);
      auto quant = [&](auto round) {
        auto f = [k, offset, round](float x) {
          float q = round(std::fma(x, k, offset));
          q = q < lo ? lo : q;
          q = q > hi ? hi : q;
          return D(q != q ? 0.0f : q);
        };
        auto each = fast::Each<decltype(f)>{f};
        fast::run_row(dst.row(r), dst.valid_cols, each, static_cast<const S*>(src.row(r)));
      };
      switch (mode) {
        case RoundMode::FLOOR: quant([](float y) { return std::floor(y); }); break;
        case RoundMode::CEIL: quant([](float y) { return std::ceil(y); }); break;
        case RoundMode::TRUNC: quant([](float y) { return std::trunc(y); }); break;
        default: quant([](float y) { return std::nearbyint(y); }); break;
      }
    }
  }
}

// TDEQUANT: per row, (float(x) - offset) * scale, each step in float, rounded to D.
template <class D, class S>
void TDEQUANT(TileRef<D> dst, TileRef<S> src, TileRef<float> scale, float offset = 0.0f) {
  static_assert(is_float_v<D> && is_int_v<S>, "TDEQUANT: integer -> float");
  ref::detail::check_tile(dst, "dst");
  ref::detail::check_covers(src, dst.valid_rows, dst.valid_cols, "src");
  ref::detail::check_covers(scale, dst.valid_rows, 1, "scale");
  if constexpr (sizeof(S) > 2) {
    return ref::TDEQUANT(dst, src, scale, offset);  // int32 -> float rounds; keep one path
  } else {
    for (int r = 0; r < dst.valid_rows; ++r) {
      const float k = scale.at(r, 0);
      auto f = [k, offset](S x) { return (float(x) - offset) * k; };
      auto each = fast::Each<decltype(f)>{f};
      fast::run_row(dst.row(r), dst.valid_cols, each, static_cast<const S*>(src.row(r)));
    }
  }
}

}  // namespace PTO_ISA_NS
}  // namespace pto
