#include "runtime/kernel_interpreter.h"

#include <cstring>
#include <functional>
#include <unordered_map>

#include <pto/pto.hpp>

namespace pypto {

namespace {

pto::DType ToPto(DataType t) { return static_cast<pto::DType>(static_cast<int>(t)); }

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

template <class T>
constexpr bool kIsFloat = pto::is_float_v<T>;
template <class T>
constexpr bool kIsNumeric = !std::is_same_v<T, bool>;

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
void ForEachSlab(const std::vector<int64_t>& shape, const std::vector<int64_t>& valid, const std::vector<int64_t>& start,
                 const std::vector<int64_t>& strides, F&& f) {
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
      pto::TileRef<T> t{reinterpret_cast<T*>(b.data) + row * cols, static_cast<int>(R >= 2 ? b.buf->shape[R - 2] : 1),
                        cols, cols, static_cast<int>(rows2), static_cast<int>(b.valid[R - 1])};
      pto::GlobalRef<T> g{reinterpret_cast<T*>(p.data) + off, {1, 1, 1, rows2, b.valid[R - 1]},
                          {0, 0, 0, stride_r, p.strides[R - 1]}};
      if (load) pto::ref::TLOAD(t, g);
      else pto::ref::TSTORE(g, t);
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
    pto::TileRef<T> src{reinterpret_cast<T*>(s.data) + a * K * B, K, static_cast<int>(B), static_cast<int>(B),
                        static_cast<int>(s.valid[in.axis]), static_cast<int>(B)};
    pto::TileRef<T> dst{reinterpret_cast<T*>(d.data) + a * B, 1, static_cast<int>(B), static_cast<int>(B), 1,
                        static_cast<int>(B)};
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
pto::scalar_t<T> ScalarArg(double s) {
  if constexpr (pto::is_float_v<T>) return static_cast<float>(s);
  else return static_cast<T>(static_cast<int64_t>(s));
}

#define PYPTO_FLOAT_UNARY(NAME)                                                          \
  {#NAME, [](Ctx& c, const Instr& in) {                                                  \
     pto::visit_dtype(ToPto(c.bufs[in.dst].buf->dtype), [&](auto tag) {                  \
       using T = typename decltype(tag)::type;                                           \
       if constexpr (kIsFloat<T>) pto::ref::NAME(Ref2D<T>(c.bufs[in.dst]), Ref2D<T>(c.bufs[in.srcs[0]])); \
       else throw UserError(#NAME " needs a floating-point tile");                       \
     });                                                                                 \
   }}
#define PYPTO_NUM_UNARY(NAME)                                                            \
  {#NAME, [](Ctx& c, const Instr& in) {                                                  \
     pto::visit_dtype(ToPto(c.bufs[in.dst].buf->dtype), [&](auto tag) {                  \
       using T = typename decltype(tag)::type;                                           \
       if constexpr (kIsNumeric<T>) pto::ref::NAME(Ref2D<T>(c.bufs[in.dst]), Ref2D<T>(c.bufs[in.srcs[0]])); \
       else throw UserError(#NAME " is not defined on bool tiles");                      \
     });                                                                                 \
   }}
#define PYPTO_NUM_BINARY(NAME)                                                           \
  {#NAME, [](Ctx& c, const Instr& in) {                                                  \
     pto::visit_dtype(ToPto(c.bufs[in.dst].buf->dtype), [&](auto tag) {                  \
       using T = typename decltype(tag)::type;                                           \
       if constexpr (kIsNumeric<T>)                                                      \
         pto::ref::NAME(Ref2D<T>(c.bufs[in.dst]), Ref2D<T>(c.bufs[in.srcs[0]]), Ref2D<T>(c.bufs[in.srcs[1]])); \
       else throw UserError(#NAME " is not defined on bool tiles");                      \
     });                                                                                 \
   }}
#define PYPTO_FLOAT_BINARY(NAME)                                                         \
  {#NAME, [](Ctx& c, const Instr& in) {                                                  \
     pto::visit_dtype(ToPto(c.bufs[in.dst].buf->dtype), [&](auto tag) {                  \
       using T = typename decltype(tag)::type;                                           \
       if constexpr (kIsFloat<T>)                                                        \
         pto::ref::NAME(Ref2D<T>(c.bufs[in.dst]), Ref2D<T>(c.bufs[in.srcs[0]]), Ref2D<T>(c.bufs[in.srcs[1]])); \
       else throw UserError(#NAME " needs a floating-point tile");                       \
     });                                                                                 \
   }}
#define PYPTO_NUM_SCALAR(NAME)                                                           \
  {#NAME, [](Ctx& c, const Instr& in) {                                                  \
     pto::visit_dtype(ToPto(c.bufs[in.dst].buf->dtype), [&](auto tag) {                  \
       using T = typename decltype(tag)::type;                                           \
       if constexpr (kIsNumeric<T>)                                                      \
         pto::ref::NAME(Ref2D<T>(c.bufs[in.dst]), Ref2D<T>(c.bufs[in.srcs[0]]), ScalarArg<T>(in.scalar)); \
       else throw UserError(#NAME " is not defined on bool tiles");                      \
     });                                                                                 \
   }}
// TSUBS / TDIVS: tile/scalar, or scalar/tile when the instruction says scalar_first.
#define PYPTO_NUM_SCALAR_EITHER(NAME)                                                    \
  {#NAME, [](Ctx& c, const Instr& in) {                                                  \
     pto::visit_dtype(ToPto(c.bufs[in.dst].buf->dtype), [&](auto tag) {                  \
       using T = typename decltype(tag)::type;                                           \
       if constexpr (kIsNumeric<T>) {                                                    \
         if (in.scalar_first)                                                            \
           pto::ref::NAME(Ref2D<T>(c.bufs[in.dst]), ScalarArg<T>(in.scalar), Ref2D<T>(c.bufs[in.srcs[0]])); \
         else                                                                            \
           pto::ref::NAME(Ref2D<T>(c.bufs[in.dst]), Ref2D<T>(c.bufs[in.srcs[0]]), ScalarArg<T>(in.scalar)); \
       } else throw UserError(#NAME " is not defined on bool tiles");                    \
     });                                                                                 \
   }}
#define PYPTO_COL_REDUCE(NAME)                                                           \
  {#NAME, [](Ctx& c, const Instr& in) {                                                  \
     pto::visit_dtype(ToPto(c.bufs[in.dst].buf->dtype), [&](auto tag) {                  \
       using T = typename decltype(tag)::type;                                           \
       if constexpr (kIsNumeric<T>)                                                      \
         ColReduce<T>(c, in, [](pto::TileRef<T> d, pto::TileRef<T> s) { pto::ref::NAME(d, s); }); \
       else throw UserError(#NAME " is not defined on bool tiles");                      \
     });                                                                                 \
   }}

const std::unordered_map<std::string, Handler>& Handlers() {
  static const std::unordered_map<std::string, Handler> h = {
      {"TLOAD", [](Ctx& c, const Instr& in) { LoadStore(c, in, true); }},
      {"TSTORE", [](Ctx& c, const Instr& in) { LoadStore(c, in, false); }},
      {"TBROADCAST", Broadcast},
      {"TEXTRACT", Extract},
      {"TMATMUL_ACC", MatmulAcc},
      {"TEXPANDS",
       [](Ctx& c, const Instr& in) {
         pto::visit_dtype(ToPto(c.bufs[in.dst].buf->dtype), [&](auto tag) {
           using T = typename decltype(tag)::type;
           pto::ref::TEXPANDS(Ref2D<T>(c.bufs[in.dst]), ScalarArg<T>(in.scalar));
         });
       }},
      {"TMOV",
       [](Ctx& c, const Instr& in) {
         pto::visit_dtype(ToPto(c.bufs[in.dst].buf->dtype), [&](auto tag) {
           using T = typename decltype(tag)::type;
           pto::ref::TMOV(Ref2D<T>(c.bufs[in.dst]), Ref2D<T>(c.bufs[in.srcs[0]]));
         });
       }},
      PYPTO_FLOAT_UNARY(TEXP), PYPTO_FLOAT_UNARY(TLOG), PYPTO_FLOAT_UNARY(TSQRT), PYPTO_FLOAT_UNARY(TRSQRT),
      PYPTO_FLOAT_UNARY(TRECIP), PYPTO_NUM_UNARY(TABS), PYPTO_NUM_UNARY(TNEG), PYPTO_NUM_UNARY(TRELU),
      PYPTO_NUM_BINARY(TADD), PYPTO_NUM_BINARY(TSUB), PYPTO_NUM_BINARY(TMUL), PYPTO_NUM_BINARY(TDIV),
      PYPTO_NUM_BINARY(TMAX), PYPTO_NUM_BINARY(TMIN),
      PYPTO_NUM_BINARY(TROWEXPANDADD), PYPTO_NUM_BINARY(TROWEXPANDSUB), PYPTO_NUM_BINARY(TROWEXPANDMUL),
      PYPTO_NUM_BINARY(TROWEXPANDDIV), PYPTO_NUM_BINARY(TROWEXPANDMAX), PYPTO_NUM_BINARY(TROWEXPANDMIN),
      PYPTO_NUM_BINARY(TCOLEXPANDADD), PYPTO_NUM_BINARY(TCOLEXPANDSUB), PYPTO_NUM_BINARY(TCOLEXPANDMUL),
      PYPTO_NUM_BINARY(TCOLEXPANDDIV), PYPTO_NUM_BINARY(TCOLEXPANDMAX), PYPTO_NUM_BINARY(TCOLEXPANDMIN),
      PYPTO_FLOAT_BINARY(TROWEXPANDEXPDIF), PYPTO_FLOAT_BINARY(TCOLEXPANDEXPDIF),
      PYPTO_NUM_SCALAR(TADDS), PYPTO_NUM_SCALAR_EITHER(TSUBS), PYPTO_NUM_SCALAR(TMULS), PYPTO_NUM_SCALAR_EITHER(TDIVS),
      PYPTO_NUM_SCALAR(TMAXS), PYPTO_NUM_SCALAR(TMINS),
      PYPTO_NUM_UNARY(TROWSUM), PYPTO_NUM_UNARY(TROWMAX), PYPTO_NUM_UNARY(TROWMIN),
      PYPTO_COL_REDUCE(TCOLSUM), PYPTO_COL_REDUCE(TCOLMAX), PYPTO_COL_REDUCE(TCOLMIN),
      {"TCVT",
       [](Ctx& c, const Instr& in) {
         pto::visit_dtype(ToPto(c.bufs[in.dst].buf->dtype), [&](auto dtag) {
           using D = typename decltype(dtag)::type;
           pto::visit_dtype(ToPto(c.bufs[in.srcs[0]].buf->dtype), [&](auto stag) {
             using S = typename decltype(stag)::type;
             pto::ref::TCVT(Ref2D<D>(c.bufs[in.dst]), Ref2D<S>(c.bufs[in.srcs[0]]));
           });
         });
       }},
  };
  return h;
}

void Exec(Ctx& c, const std::vector<Instr>& body) {
  const auto& handlers = Handlers();
  for (const Instr& in : body) {
    if (in.opcode == "LOOP") {
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
    auto it = handlers.find(in.opcode);
    if (it == handlers.end()) throw InternalError("the interpreter has no instruction " + in.opcode);
    if (in.opcode != "TMATMUL_ACC" && !c.wide_acc.empty()) c.wide_acc.erase(in.dst);
    try {
      it->second(c, in);
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
