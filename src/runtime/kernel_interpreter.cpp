#include "runtime/kernel_interpreter.h"

#include <array>
#include <cstring>
#include <functional>
#include <pto/pto.hpp>
#include <unordered_map>

#include "pypto/atomic_store.hpp"
#include "pypto/dist_signal.hpp"
#include "pypto/index_nd.hpp"
#include "pypto/random.hpp"

namespace pypto {

namespace {

// The IR's dtypes have pto's order; the MX storage formats are bytes on the ISA.
pto::DType ToPto(DataType t) {
  return IsStorageOnly(t) ? pto::DType::UINT8 : static_cast<pto::DType>(static_cast<int>(t));
}

// A tile buffer at one grid point: where it is and its valid extent per dim.
struct BufState {
  char* data;
  const TileBuf* buf;
  std::vector<int64_t> valid;
};

template <class T>
pto::TileRef<T> Ref2D(const BufState& b) {
  int rows = static_cast<int>(b.buf->rows());
  int cols = static_cast<int>(b.buf->cols());
  // Compute instructions act on every row (rows past a tail hold padding, loaded as zero) and
  // on the valid columns, which is what a row reduction must not exceed.
  return pto::TileRef<T>{reinterpret_cast<T*>(b.data), rows, cols, cols, rows, static_cast<int>(b.valid.back())};
}

struct Ctx {
  const Kernel& k;
  const std::vector<BoundParam>& params;
  std::vector<BufState>& bufs;
  SymEnv& env;
  // fp32 accumulators (Acc tiles) in double across the TMATMUL_ACC steps of a K loop, so that the
  // reference matmul rounds once over the whole K, whatever the cube tile shape. Dropped when
  // any other instruction writes the tile.
  std::unordered_map<int, std::vector<double>> wide_acc;
  int (*stop)(void*) = nullptr;  // cancellation (PyptoKernelCall::stop); once it says so, stopped
  void* stop_ctx = nullptr;
  bool stopped = false;
};

// Visits the tile's leading-dim slabs (dims 0..R-3) that lie in the valid region; calls
// f(tile_row_offset, elem_offset_in_param) for each 2-D slab.
template <class F>
void ForEachSlab(const std::vector<int64_t>& shape, const std::vector<int64_t>& valid,
                 const std::vector<int64_t>& start, const std::vector<int64_t>& strides, F&& f) {
  int R = static_cast<int>(shape.size());
  int lead = R - 2;
  int64_t base = 0;
  for (int d = 0; d < R; ++d) base += start[d] * strides[d];
  if (lead <= 0) {
    f(0, base);
    return;
  }
  std::vector<int64_t> idx(lead, 0);
  for (;;) {
    int64_t row = 0, off = base;
    for (int d = 0; d < lead; ++d) {
      row = row * shape[d] + idx[d];
      off += idx[d] * strides[d];
    }
    f(row * shape[R - 2], off);
    int d = lead - 1;
    while (d >= 0 && ++idx[d] == valid[d]) idx[d--] = 0;
    if (d < 0) return;
  }
}

void LoadStore(Ctx& c, const Instr& in, bool load) {
  const BoundParam& p = c.params[in.param];
  const BufState& b = c.bufs[load ? in.dst : in.srcs[0]];
  int R = static_cast<int>(b.buf->shape.size());
  std::vector<int64_t> start(R);
  for (int d = 0; d < R; ++d) start[d] = in.coord[d].Eval(c.env);
  for (int d = 0; d < R; ++d)
    if (b.valid[d] < 0 || start[d] + b.valid[d] > p.shape[d])
      throw InternalError("tile access out of bounds in kernel " + c.k.name);
  if (load) {
    bool tail = false;
    for (int d = 0; d < R; ++d) tail = tail || b.valid[d] < b.buf->shape[d];
    if (tail) std::memset(b.data, 0, b.buf->bytes());  // padding is zero, deterministically
  }
  int64_t rows2 = R >= 2 ? b.valid[R - 2] : 1;
  int64_t stride_r = R >= 2 ? p.strides[R - 2] : 0;
  pto::visit_dtype(ToPto(b.buf->dtype), [&](auto tag) {
    using T = typename decltype(tag)::type;
    int cols = static_cast<int>(b.buf->cols());
    ForEachSlab(b.buf->shape, b.valid, start, p.strides, [&](int64_t row, int64_t off) {
      pto::TileRef<T> t{reinterpret_cast<T*>(b.data) + row * cols,
                        static_cast<int>(R >= 2 ? b.buf->shape[R - 2] : 1),
                        cols,
                        cols,
                        static_cast<int>(rows2),
                        static_cast<int>(b.valid[R - 1])};
      pto::GlobalRef<T> g{
          reinterpret_cast<T*>(p.data) + off, {1, 1, 1, rows2, b.valid[R - 1]}, {0, 0, 0, stride_r, p.strides[R - 1]}};
      if (load) {
        pto::ref::TLOAD(t, g);
      } else if (in.atomic_add) {  // several writers may add into these elements at once
        for (int r = 0; r < t.valid_rows; ++r)
          for (int c2 = 0; c2 < t.valid_cols; ++c2) pypto_kernel::AtomicAdd(g.addr(r, c2), t.at(r, c2));
      } else {
        pto::ref::TSTORE(g, t);
      }
    });
  });
}

// Generic N-D broadcast of a smaller tile into a full one (size-1 dims repeat).
void Broadcast(Ctx& c, const Instr& in) {
  const BufState& s = c.bufs[in.srcs[0]];
  const BufState& d = c.bufs[in.dst];
  int R = static_cast<int>(d.buf->shape.size());
  int64_t n = 1;
  for (auto e : d.buf->shape) n *= e;
  size_t es = DataTypeBytes(d.buf->dtype);
  std::vector<int64_t> sstride(R);
  int64_t acc = 1;
  for (int k = R - 1; k >= 0; --k) {
    sstride[k] = s.buf->shape[k] == 1 ? 0 : acc;
    acc *= s.buf->shape[k];
  }
  std::vector<int64_t> idx(R, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t so = 0;
    for (int k = 0; k < R; ++k) so += idx[k] * sstride[k];
    std::memcpy(d.data + i * es, s.data + so * es, es);
    for (int k = R - 1; k >= 0 && ++idx[k] == d.buf->shape[k]; --k) idx[k] = 0;
  }
}

// Column reduction over tile axis `axis`: for each index of the dims before it, reduce the
// (axis extent) x (product of later dims) slab with TCOL*.
template <class T, class F>
void ColReduce(Ctx& c, const Instr& in, F&& op) {
  const BufState& s = c.bufs[in.srcs[0]];
  const BufState& d = c.bufs[in.dst];
  const auto& shape = s.buf->shape;
  int64_t A = 1, B = 1;
  for (int k = 0; k < in.axis; ++k) A *= shape[k];
  for (size_t k = in.axis + 1; k < shape.size(); ++k) B *= shape[k];
  int K = static_cast<int>(shape[in.axis]);
  for (int64_t a = 0; a < A; ++a) {
    pto::TileRef<T> src{reinterpret_cast<T*>(s.data) + a * K * B,
                        K,
                        static_cast<int>(B),
                        static_cast<int>(B),
                        static_cast<int>(s.valid[in.axis]),
                        static_cast<int>(B)};
    pto::TileRef<T> dst{
        reinterpret_cast<T*>(d.data) + a * B, 1, static_cast<int>(B), static_cast<int>(B), 1, static_cast<int>(B)};
    op(dst, src);
  }
}

// The last two dims of a tile as a 2-D ref whose valid region is the buffer's valid extent in
// both dims (cube tiles: no padding rows take part).
template <class T>
pto::TileRef<T> Valid2D(const BufState& b) {
  int R = static_cast<int>(b.buf->shape.size());
  int rows = static_cast<int>(b.buf->rows()), cols = static_cast<int>(b.buf->cols());
  int vr = R >= 2 ? static_cast<int>(b.valid[R - 2]) : 1;
  return pto::TileRef<T>{reinterpret_cast<T*>(b.data), rows, cols, cols, vr, static_cast<int>(b.valid[R - 1])};
}

// dst = src[row : row + VR, col : col + VC] (or the transpose of src[row : row + VC, col : col + VR]);
// the rest of dst is zero.
void Extract(Ctx& c, const Instr& in) {
  const BufState& s = c.bufs[in.srcs[0]];
  const BufState& d = c.bufs[in.dst];
  int64_t row = in.coord[0].Eval(c.env), col = in.coord[1].Eval(c.env);
  std::memset(d.data, 0, d.buf->bytes());
  pto::visit_dtype(ToPto(d.buf->dtype), [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto dst = Valid2D<T>(d);
    auto src = Valid2D<T>(s);
    int sr = in.transpose ? dst.valid_cols : dst.valid_rows, sc = in.transpose ? dst.valid_rows : dst.valid_cols;
    if (row < 0 || col < 0 || row + sr > src.valid_rows || col + sc > src.valid_cols)
      throw InternalError("TEXTRACT window outside the source's valid region in kernel " + c.k.name);
    for (int i = 0; i < dst.valid_rows; ++i)
      for (int j = 0; j < dst.valid_cols; ++j)
        dst.at(i, j) = in.transpose ? src.at(row + j, col + i) : src.at(row + i, col + j);
  });
}

// dst[VM, VN] += left[VM, VK] x right[VK, VN] with the reference TMATMUL_ACC.
void MatmulAcc(Ctx& c, const Instr& in) {
  const BufState& d = c.bufs[in.dst];
  const BufState& a = c.bufs[in.srcs[0]];
  const BufState& b = c.bufs[in.srcs[1]];
  pto::visit_dtype(ToPto(a.buf->dtype), [&](auto itag) {
    using In = typename decltype(itag)::type;
    if constexpr (std::is_same_v<In, int8_t>) {
      pto::ref::TMATMUL_ACC(Valid2D<int32_t>(d), Valid2D<In>(a), Valid2D<In>(b));
    } else if constexpr (pto::is_float_v<In>) {
      pto::TileRef<float> D = Valid2D<float>(d);
      pto::TileRef<In> A = Valid2D<In>(a), B = Valid2D<In>(b);
      const int M = D.valid_rows, N = D.valid_cols, K = A.valid_cols;
      if (A.valid_rows < M || B.valid_rows < K || B.valid_cols < N)
        throw InternalError("TMATMUL_ACC operands do not cover the accumulator in kernel " + c.k.name);
      std::vector<double>& w = c.wide_acc[in.dst];
      bool fresh = w.size() != size_t(M) * N;
      for (int m = 0; !fresh && m < M; ++m)
        for (int n = 0; !fresh && n < N; ++n) {
          float was = D.at(m, n), kept = float(w[size_t(m) * N + n]);
          fresh = !(was == kept || (was != was && kept != kept));
        }
      if (fresh) {
        w.assign(size_t(M) * N, 0.0);
        for (int m = 0; m < M; ++m)
          for (int n = 0; n < N; ++n) w[size_t(m) * N + n] = D.at(m, n);
      }
      for (int m = 0; m < M; ++m) {
        double* row = &w[size_t(m) * N];
        for (int k = 0; k < K; ++k) {
          const double av = pto::elem::to_double(A.at(m, k));
          for (int n = 0; n < N; ++n) row[n] += av * pto::elem::to_double(B.at(k, n));
        }
        for (int n = 0; n < N; ++n) D.at(m, n) = float(row[n]);
      }
    } else {
      throw InternalError("TMATMUL_ACC on an unsupported dtype in kernel " + c.k.name);
    }
  });
}

using Handler = std::function<void(Ctx&, const Instr&)>;

// The scalar operand as the instruction takes it: a float for floating tiles (16-bit ones compute
// in float), the exact integer for integer tiles (the recorder checked it fits).
template <class T>
pto::scalar_t<T> ScalarArg(const Instr& in) {
  if constexpr (pto::is_float_v<T>)
    return static_cast<float>(in.scalar);
  else
    return static_cast<T>(in.IntScalar());
}

// Whether the dtype class of an instruction (include/pto/isa_list.hpp) admits T.
template <InstrDtypes P, class T>
constexpr bool Admits() {
  constexpr bool is_bool = std::is_same_v<T, bool>, is_float = pto::is_float_v<T>;
  switch (P) {
    case InstrDtypes::F:
      return is_float;
    case InstrDtypes::I:
      return !is_float && !is_bool;
    case InstrDtypes::N:
      return !is_bool;
    case InstrDtypes::B:
      return !is_float;
    case InstrDtypes::A:
      return true;
  }
  return false;
}

// Calls `run(tag)` with the type tag of `dt` when the class admits it; else the instruction
// cannot run on this tile (the compiler should not have emitted it).
template <InstrDtypes P, class Run>
void OnDtype(Opcode op, DataType dt, Run&& run) {
  pto::visit_dtype(ToPto(dt), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (Admits<P, T>())
      run(tag);
    else
      throw InternalError(std::string(OpcodeName(op)) + " does not take " + DataTypeName(dt) + " tiles");
  });
}

// The handler of an instruction of a regular form: its reference implementation `ref` called with
// the operands the form takes (see include/pto/isa_list.hpp). Special forms have their own.
template <InstrForm F, InstrDtypes P, class Ref>
Handler FamilyHandler(Ref ref) {
  return [ref](Ctx& c, const Instr& in) {
    OnDtype<P>(in.opcode, c.bufs[in.dst].buf->dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      auto dst = Ref2D<T>(c.bufs[in.dst]);
      auto src = [&](int i) { return Ref2D<T>(c.bufs[in.srcs[i]]); };
      if constexpr (F == InstrForm::Binary || F == InstrForm::RowExpandBinary || F == InstrForm::ColExpandBinary ||
                    F == InstrForm::Concat) {
        ref(dst, src(0), src(1));
      } else if constexpr (F == InstrForm::Unary || F == InstrForm::RowReduce || F == InstrForm::Expand ||
                           F == InstrForm::Move) {
        ref(dst, src(0));
      } else if constexpr (F == InstrForm::Ternary) {
        ref(dst, src(0), src(1), src(2));
      } else if constexpr (F == InstrForm::ColReduce) {
        ColReduce<T>(c, in, [&](pto::TileRef<T> d, pto::TileRef<T> s) { ref(d, s); });
      } else if constexpr (F == InstrForm::Scalar) {
        auto scalar = ScalarArg<T>(in);
        if (!in.scalar_first) {
          ref(dst, src(0), scalar);
        } else if constexpr (requires { ref(dst, scalar, src(0)); }) {  // TSUBS / TDIVS: scalar op tile
          ref(dst, scalar, src(0));
        } else {
          throw InternalError(std::string(OpcodeName(in.opcode)) + " has no scalar-first form");
        }
      }
    });
  };
}

using HandlerTable = std::array<Handler, static_cast<size_t>(Opcode::LOOP) + 1>;

const HandlerTable& Handlers() {
  static const HandlerTable h = [] {
    HandlerTable t{};
    // Every instruction of a regular form, from the one list: its reference implementation.
#define PYPTO_REGULAR(NAME, FORM, DTYPES)                                                     \
  t[static_cast<size_t>(Opcode::NAME)] = FamilyHandler<InstrForm::FORM, InstrDtypes::DTYPES>( \
      [](auto&&... a) -> decltype(pto::ref::NAME(a...)) { return pto::ref::NAME(a...); });
#define PYPTO_FORM_Binary PYPTO_REGULAR
#define PYPTO_FORM_Unary PYPTO_REGULAR
#define PYPTO_FORM_Scalar PYPTO_REGULAR
#define PYPTO_FORM_Ternary PYPTO_REGULAR
#define PYPTO_FORM_RowExpandBinary PYPTO_REGULAR
#define PYPTO_FORM_ColExpandBinary PYPTO_REGULAR
#define PYPTO_FORM_RowReduce PYPTO_REGULAR
#define PYPTO_FORM_ColReduce PYPTO_REGULAR
#define PYPTO_FORM_Expand PYPTO_REGULAR
#define PYPTO_FORM_Move PYPTO_REGULAR
#define PYPTO_FORM_Concat PYPTO_REGULAR
#define PYPTO_FORM_Special(NAME, FORM, DTYPES)
#define PYPTO_FAMILY(NAME, FORM, DTYPES) PYPTO_FORM_##FORM(NAME, FORM, DTYPES)
    PTO_INSTRUCTIONS(PYPTO_FAMILY)
#undef PYPTO_FAMILY
#undef PYPTO_FORM_Binary
#undef PYPTO_FORM_Unary
#undef PYPTO_FORM_Scalar
#undef PYPTO_FORM_Ternary
#undef PYPTO_FORM_RowExpandBinary
#undef PYPTO_FORM_ColExpandBinary
#undef PYPTO_FORM_RowReduce
#undef PYPTO_FORM_ColReduce
#undef PYPTO_FORM_Expand
#undef PYPTO_FORM_Move
#undef PYPTO_FORM_Concat
#undef PYPTO_FORM_Special
#undef PYPTO_REGULAR
    // The special forms the compiler emits.
    using O = Opcode;
    t[size_t(O::TLOAD)] = [](Ctx& c, const Instr& in) { LoadStore(c, in, true); };
    t[size_t(O::TSTORE)] = [](Ctx& c, const Instr& in) { LoadStore(c, in, false); };
    t[size_t(O::TBROADCAST)] = Broadcast;
    t[size_t(O::TEXTRACT)] = Extract;
    t[size_t(O::TMATMUL_ACC)] = MatmulAcc;
    t[size_t(O::TEXPANDS)] = [](Ctx& c, const Instr& in) {
      pto::visit_dtype(ToPto(c.bufs[in.dst].buf->dtype), [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (in.scalar_expr.defined())  // a run-time integer: converted once, as the generated code does
          pto::ref::TEXPANDS(Ref2D<T>(c.bufs[in.dst]), static_cast<pto::scalar_t<T>>(in.scalar_expr.Eval(c.env)));
        else
          pto::ref::TEXPANDS(Ref2D<T>(c.bufs[in.dst]), ScalarArg<T>(in));
      });
    };
    // Row arg-reductions and scans: 2-D over the tile's rows. Column ones: per slab of the axis.
    auto row_op = [](auto ref) {
      return [ref](Ctx& c, const Instr& in) {
        OnDtype<InstrDtypes::N>(in.opcode, c.bufs[in.srcs[0]].buf->dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          ref(c, in, tag, Ref2D<T>(c.bufs[in.srcs[0]]));
        });
      };
    };
    t[size_t(O::TROWARGMAX)] = row_op(
        [](Ctx& c, const Instr& in, auto, auto src) { pto::ref::TROWARGMAX(Ref2D<int32_t>(c.bufs[in.dst]), src); });
    t[size_t(O::TROWARGMIN)] = row_op(
        [](Ctx& c, const Instr& in, auto, auto src) { pto::ref::TROWARGMIN(Ref2D<int32_t>(c.bufs[in.dst]), src); });
    t[size_t(O::TROWCUMSUM)] = row_op([](Ctx& c, const Instr& in, auto tag, auto src) {
      pto::ref::TROWCUMSUM(Ref2D<typename decltype(tag)::type>(c.bufs[in.dst]), src);
    });
    t[size_t(O::TROWCUMPROD)] = row_op([](Ctx& c, const Instr& in, auto tag, auto src) {
      pto::ref::TROWCUMPROD(Ref2D<typename decltype(tag)::type>(c.bufs[in.dst]), src);
    });
    auto col_op = [](auto ref, bool arg) {
      return [ref, arg](Ctx& c, const Instr& in) {
        OnDtype<InstrDtypes::N>(in.opcode, c.bufs[in.srcs[0]].buf->dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          const BufState& s = c.bufs[in.srcs[0]];
          const BufState& d = c.bufs[in.dst];
          const auto& shape = s.buf->shape;
          int64_t A = 1, B = 1;
          for (int k = 0; k < in.axis; ++k) A *= shape[k];
          for (size_t k = in.axis + 1; k < shape.size(); ++k) B *= shape[k];
          const int K = static_cast<int>(shape[in.axis]), vk = static_cast<int>(s.valid[in.axis]);
          const int drows = arg ? 1 : K;
          for (int64_t a = 0; a < A; ++a) {
            pto::TileRef<T> src{reinterpret_cast<T*>(s.data) + a * K * B,
                                K,
                                static_cast<int>(B),
                                static_cast<int>(B),
                                vk,
                                static_cast<int>(B)};
            ref(d.data + a * drows * B * static_cast<int64_t>(DataTypeBytes(d.buf->dtype)), drows, vk,
                static_cast<int>(B), src);
          }
        });
      };
    };
    auto col_arg = [](bool is_max) {
      return [is_max](char* d, int rows, int, int B, auto src) {
        pto::TileRef<int32_t> dst{reinterpret_cast<int32_t*>(d), rows, B, B, 1, B};
        if (is_max)
          pto::ref::TCOLARGMAX(dst, src);
        else
          pto::ref::TCOLARGMIN(dst, src);
      };
    };
    auto col_scan = [](bool prod) {
      return [prod](char* d, int rows, int vk, int B, auto src) {
        using T = std::remove_pointer_t<decltype(src.data)>;
        pto::TileRef<T> dst{reinterpret_cast<T*>(d), rows, B, B, vk, B};
        if (prod)
          pto::ref::TCOLCUMPROD(dst, src);
        else
          pto::ref::TCOLCUMSUM(dst, src);
      };
    };
    t[size_t(O::TCOLARGMAX)] = col_op(col_arg(true), true);
    t[size_t(O::TCOLARGMIN)] = col_op(col_arg(false), true);
    t[size_t(O::TCOLCUMSUM)] = col_op(col_scan(false), false);
    t[size_t(O::TCOLCUMPROD)] = col_op(col_scan(true), false);
    t[size_t(O::TROWTOPK)] = [](Ctx& c, const Instr& in) {
      OnDtype<InstrDtypes::N>(in.opcode, c.bufs[in.srcs[0]].buf->dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        pto::ref::TROWTOPK(Ref2D<T>(c.bufs[in.dst]), Ref2D<T>(c.bufs[in.srcs[0]]), in.cmp);
      });
    };
    t[size_t(O::TROWTOPKIDX)] = [](Ctx& c, const Instr& in) {
      OnDtype<InstrDtypes::N>(in.opcode, c.bufs[in.srcs[0]].buf->dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        pto::ref::TROWTOPKIDX(Ref2D<int32_t>(c.bufs[in.dst]), Ref2D<T>(c.bufs[in.srcs[0]]), in.cmp);
      });
    };
    t[size_t(O::TCOLGATHER)] = [](Ctx& c, const Instr& in) {
      const BufState& d = c.bufs[in.dst];
      const BufState& s = c.bufs[in.srcs[0]];
      const BufState& ix = c.bufs[in.srcs[1]];
      const auto& shape = d.buf->shape;
      int64_t A = 1, B = 1;
      for (int k = 0; k < in.axis; ++k) A *= shape[k];
      for (size_t k = in.axis + 1; k < shape.size(); ++k) B *= shape[k];
      const int Kd = static_cast<int>(shape[in.axis]), Ks = static_cast<int>(s.buf->shape[in.axis]);
      pto::visit_dtype(ToPto(d.buf->dtype), [&](auto tag) {
        using T = typename decltype(tag)::type;
        OnDtype<InstrDtypes::I>(in.opcode, ix.buf->dtype, [&](auto itag) {
          using I = typename decltype(itag)::type;
          const int b = static_cast<int>(B);
          for (int64_t a = 0; a < A; ++a) {
            pto::TileRef<T> dst{reinterpret_cast<T*>(d.data) + a * Kd * B, Kd, b, b,
                                static_cast<int>(d.valid[in.axis]),        b};
            pto::TileRef<T> src{reinterpret_cast<T*>(s.data) + a * Ks * B, Ks, b, b,
                                static_cast<int>(s.valid[in.axis]),        b};
            pto::TileRef<I> idx{reinterpret_cast<I*>(ix.data) + a * Kd * B, Kd, b, b,
                                static_cast<int>(d.valid[in.axis]),         b};
            try {
              pto::ref::TCOLGATHER(dst, src, idx);
            } catch (const pto::Error& e) {
              throw UserError("pypto.gather along dim " + std::to_string(in.axis) + ": " + e.what(), in.loc);
            }
          }
        });
      });
    };
    t[size_t(O::TSCATTERND)] = [](Ctx& c, const Instr& in) {
      const BufState& s = c.bufs[in.srcs[0]];
      const BufState& ix = c.bufs[in.srcs[1]];
      const BoundParam& p = c.params[in.param];
      const int R = static_cast<int>(s.buf->shape.size());
      std::vector<int64_t> start(R);
      for (int d = 0; d < R; ++d) start[d] = in.coord[d].Eval(c.env);
      pto::visit_dtype(ToPto(s.buf->dtype), [&](auto tag) {
        using T = typename decltype(tag)::type;
        OnDtype<InstrDtypes::I>(in.opcode, ix.buf->dtype, [&](auto itag) {
          using I = typename decltype(itag)::type;
          try {
            pypto_kernel::ScatterND<T, I>(p.data, p.shape.data(), p.strides.data(), R, s.data, ix.data,
                                          s.buf->shape.data(), s.valid.data(), start.data(), in.axis,
                                          static_cast<int>(in.scalar),
                                          in.what.empty() ? "pypto.scatter" : in.what.c_str(), "");
          } catch (const std::invalid_argument& e) {
            throw UserError(e.what(), in.loc);
          }
        });
      });
    };
    t[size_t(O::TGATHERND)] = [](Ctx& c, const Instr& in) {
      const BufState& d = c.bufs[in.dst];
      const BufState& ix = c.bufs[in.srcs[0]];
      const BoundParam& p = c.params[in.param];
      const int R = static_cast<int>(d.buf->shape.size());
      std::vector<int64_t> start(R);
      for (int k = 0; k < R; ++k) start[k] = in.coord[k].Eval(c.env);
      pto::visit_dtype(ToPto(d.buf->dtype), [&](auto tag) {
        using T = typename decltype(tag)::type;
        OnDtype<InstrDtypes::I>(in.opcode, ix.buf->dtype, [&](auto itag) {
          using I = typename decltype(itag)::type;
          try {
            pypto_kernel::GatherND<T, I>(d.data, p.data, p.shape.data(), p.strides.data(), R, ix.data,
                                         d.buf->shape.data(), d.valid.data(), start.data(), in.axis,
                                         ("pypto.gather along dim " + std::to_string(in.axis)).c_str(), "");
          } catch (const std::invalid_argument& e) {
            throw UserError(e.what(), in.loc);
          }
        });
      });
    };
    // The signals: the same functions the generated kernels call (pypto/dist_signal.hpp).
    auto cell = [](Ctx& c, const Instr& in) {
      const BoundParam& p = c.params[in.param];
      int64_t off = 0;
      for (size_t d = 0; d < in.coord.size(); ++d) off += in.coord[d].Eval(c.env) * p.strides[d];
      return reinterpret_cast<int32_t*>(p.data) + off;
    };
    t[size_t(O::TNOTIFY)] = [cell](Ctx& c, const Instr& in) {
      pypto_kernel::Notify(cell(c, in), in.IntScalar(), static_cast<int>(in.notify));
    };
    t[size_t(O::TWAIT)] = [cell](Ctx& c, const Instr& in) {
      try {
        if (pypto_kernel::Wait(cell(c, in), in.IntScalar(), static_cast<int>(in.cmp),
                               in.notify == NotifyOp::AtomicAdd ? 1 : 0, c.stop, c.stop_ctx, "a signal wait", ""))
          c.stopped = true;
      } catch (const std::runtime_error& e) {
        throw UserError(e.what(), in.loc);
      }
    };
    t[size_t(O::TPHILOX)] = [](Ctx& c, const Instr& in) {
      const BufState& d = c.bufs[in.dst];
      pto::visit_dtype(ToPto(d.buf->dtype), [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_same_v<T, float> || std::is_same_v<T, pto::half> || std::is_same_v<T, pto::bfloat16>)
          pypto_kernel::PhiloxUniform<T>(d.data, d.valid.back(), in.coord[0].Eval(c.env), *in.coord[1].as_const(),
                                         *in.coord[2].as_const());
        else
          throw InternalError("TPHILOX into a non-float tile");
      });
    };
    t[size_t(O::TCI)] = [](Ctx& c, const Instr& in) {
      OnDtype<InstrDtypes::I>(in.opcode, c.bufs[in.dst].buf->dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        pto::ref::TCI(Ref2D<T>(c.bufs[in.dst]), static_cast<T>(in.coord[0].Eval(c.env)));
      });
    };
    t[size_t(O::TCMP)] = [](Ctx& c, const Instr& in) {
      OnDtype<InstrDtypes::N>(in.opcode, c.bufs[in.srcs[0]].buf->dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        pto::ref::TCMP(Ref2D<bool>(c.bufs[in.dst]), Ref2D<T>(c.bufs[in.srcs[0]]), Ref2D<T>(c.bufs[in.srcs[1]]), in.cmp);
      });
    };
    t[size_t(O::TCMPS)] = [](Ctx& c, const Instr& in) {
      OnDtype<InstrDtypes::N>(in.opcode, c.bufs[in.srcs[0]].buf->dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        T s;  // the scalar in the tile's dtype, as numpy and torch compare
        if constexpr (pto::is_float_v<T>)
          s = pto::elem::from_double<T>(in.scalar);
        else
          s = static_cast<T>(in.IntScalar());
        pto::ref::TCMPS(Ref2D<bool>(c.bufs[in.dst]), Ref2D<T>(c.bufs[in.srcs[0]]), s, in.cmp);
      });
    };
    t[size_t(O::TSEL)] = [](Ctx& c, const Instr& in) {
      pto::visit_dtype(ToPto(c.bufs[in.dst].buf->dtype), [&](auto tag) {
        using T = typename decltype(tag)::type;
        pto::ref::TSEL(Ref2D<T>(c.bufs[in.dst]), Ref2D<bool>(c.bufs[in.srcs[0]]), Ref2D<T>(c.bufs[in.srcs[1]]),
                       Ref2D<T>(c.bufs[in.srcs[2]]));
      });
    };
    t[size_t(O::TCVT)] = [](Ctx& c, const Instr& in) {
      pto::visit_dtype(ToPto(c.bufs[in.dst].buf->dtype), [&](auto dtag) {
        using D = typename decltype(dtag)::type;
        pto::visit_dtype(ToPto(c.bufs[in.srcs[0]].buf->dtype), [&](auto stag) {
          using S = typename decltype(stag)::type;
          pto::ref::TCVT(Ref2D<D>(c.bufs[in.dst]), Ref2D<S>(c.bufs[in.srcs[0]]), in.round);
        });
      });
    };
    return t;
  }();
  return h;
}

void Exec(Ctx& c, const std::vector<Instr>& body) {
  const auto& handlers = Handlers();
  for (const Instr& in : body) {
    if (in.opcode == Opcode::LOOP) {
      int64_t trip = in.trip.Eval(c.env);
      for (int64_t r = 0; r < trip; ++r) {
        if (c.stopped || (c.stop && c.stop(c.stop_ctx))) {
          c.stopped = true;
          return;
        }
        c.env[in.var.empty() ? kReduceVar : in.var] = r;
        for (auto& b : c.bufs)  // valid extents may depend on the loop index
          for (size_t d = 0; d < b.valid.size(); ++d) b.valid[d] = b.buf->valid[d].Eval(c.env);
        Exec(c, in.body);
      }
      if (c.stopped) return;
      continue;
    }
    const Handler& run = handlers[static_cast<size_t>(in.opcode)];
    if (!run) throw InternalError(std::string("the interpreter has no instruction ") + OpcodeName(in.opcode));
    if (in.opcode != Opcode::TMATMUL_ACC && !c.wide_acc.empty()) c.wide_acc.erase(in.dst);
    try {
      run(c, in);
    } catch (const pto::Error& e) {
      throw InternalError(std::string("PTO instruction failed in kernel ") + c.k.name + ": " + e.what());
    }
  }
}

}  // namespace

void InterpretKernel(const Kernel& k, const std::vector<BoundParam>& params, const std::vector<int64_t>& coord,
                     SymEnv& env, char* ub, int (*stop)(void*), void* stop_ctx) {
  for (size_t d = 0; d < coord.size(); ++d) env[GridVar(static_cast<int>(d))] = coord[d];
  env[kReduceVar] = 0;
  env[kInnerKVar] = 0;
  std::vector<BufState> bufs(k.bufs.size());
  for (size_t i = 0; i < k.bufs.size(); ++i) {
    const TileBuf& b = k.bufs[i];
    bufs[i].buf = &b;
    bufs[i].data = ub + b.offset;
    bufs[i].valid.resize(b.valid.size());
    for (size_t d = 0; d < b.valid.size(); ++d) bufs[i].valid[d] = b.valid[d].Eval(env);
  }
  Ctx c{k, params, bufs, env, {}, stop, stop_ctx};
  Exec(c, k.body);
}

}  // namespace pypto
