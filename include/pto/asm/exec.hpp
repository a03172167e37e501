// Runs PTO assembly kernels: binds global tensors and scalars, allocates the declared tiles and
// FIFOs, and executes statements through pto::dyn (the fast instruction implementations).
// Several kernels in one module run concurrently, one thread each (e.g. a cube kernel feeding a
// vector kernel through TPUSH / TPOP).
#pragma once

#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "pto/asm/module.hpp"
#include "pto/asm/parser.hpp"
#include "pto/dyn/registry.hpp"

namespace pto::as {

// A global tensor given to a kernel: row-major unless strides are given (in elements).
struct Tensor {
  DType dtype = DType::FP32;
  void* data = nullptr;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // empty = dense row-major
};

struct Bindings {
  std::map<std::string, Tensor> tensors;       // by name, with the '%'
  std::map<std::string, dyn::Scalar> scalars;  // by name, with the '%'
};

// The executor calls the per-ISA instruction table, so it is per-ISA too.
inline namespace PTO_ISA_NS {
namespace detail {

struct Fifos {
  std::map<std::string, std::shared_ptr<void>> owned;
  std::map<std::string, dyn::AnyFifo> refs;
  std::vector<std::function<void()>> close_all;
};

class KernelRun {
 public:
  KernelRun(const Kernel& k, Bindings& b, Fifos& f) : k_(k), fifos_(f) {
    for (const Decl& d : k.decls) bind(d, b);
  }
  void run() { exec(k_.body); }

 private:
  struct TileSlot {
    TileType type;
    std::unique_ptr<std::byte[], void (*)(std::byte*)> mem{nullptr, [](std::byte*) {}};
    dyn::AnyTile tile;
  };

  [[noreturn]] void fail(int line, const std::string& msg) const {
    throw Error(k_.name + ":" + std::to_string(line) + ": " + msg);
  }

  void bind(const Decl& d, Bindings& b) {
    switch (d.kind) {
      case Decl::GM_ARG: {
        auto it = b.tensors.find(d.name);
        if (it == b.tensors.end()) fail(d.line, "no tensor bound to " + d.name);
        Tensor t = it->second;
        if (t.dtype != d.gm.dtype)
          fail(d.line, d.name + " is " + dyn::short_name(d.gm.dtype) + ", bound tensor is " +
                           dyn::short_name(t.dtype));
        if (t.shape.size() != d.gm.dims.size()) fail(d.line, d.name + ": rank mismatch");
        for (size_t i = 0; i < t.shape.size(); ++i)
          if (d.gm.dims[i] >= 0 && d.gm.dims[i] != t.shape[i])
            fail(d.line, d.name + ": dim " + std::to_string(i) + " is " +
                             std::to_string(t.shape[i]) + ", declared " +
                             std::to_string(d.gm.dims[i]));
        if (t.strides.empty()) {
          t.strides.assign(t.shape.size(), 1);
          for (int i = int(t.shape.size()) - 2; i >= 0; --i)
            t.strides[i] = t.strides[i + 1] * t.shape[i + 1];
        }
        tensors_[d.name] = t;
        break;
      }
      case Decl::SCALAR_ARG: {
        auto it = b.scalars.find(d.name);
        if (it == b.scalars.end()) fail(d.line, "no scalar bound to " + d.name);
        scalars_[d.name] = it->second;
        break;
      }
      case Decl::CONST: scalars_[d.name] = literal(d.line, d.value); break;
      case Decl::TILE: {
        TileSlot& s = tiles_[d.name];
        s.type = d.tile;
        const size_t bytes = size_t(d.tile.rows) * d.tile.cols * dtype_size(d.tile.dtype);
        s.mem = {static_cast<std::byte*>(::operator new[](bytes, std::align_val_t(64))),
                 [](std::byte* p) { ::operator delete[](p, std::align_val_t(64)); }};
        std::fill_n(s.mem.get(), bytes, std::byte{0});
        // Dynamic valid dims start as the full tile until set_valid.
        s.tile = {d.tile.dtype,
                  s.mem.get(),
                  d.tile.rows,
                  d.tile.cols,
                  d.tile.cols,
                  d.tile.valid_rows < 0 ? d.tile.rows : d.tile.valid_rows,
                  d.tile.valid_cols < 0 ? d.tile.cols : d.tile.valid_cols};
        break;
      }
    }
  }

  dyn::Scalar literal(int line, const std::string& x) const {
    try {
      size_t n = 0;
      const bool is_float = x.find_first_of(".eEni") != std::string::npos;  // inf, nan, 1e3
      if (!is_float) {
        const long long v = std::stoll(x, &n);
        if (n == x.size()) return dyn::Scalar::of_int(v);
      } else {
        const double v = std::stod(x, &n);
        if (n == x.size()) return dyn::Scalar::of_float(v);
      }
    } catch (...) {
    }
    fail(line, "bad number '" + x + "'");
  }

  dyn::Scalar scalar(int line, const Operand& o) const {
    if (!o.is_name()) return literal(line, o.text);
    auto it = scalars_.find(o.text);
    if (it == scalars_.end()) fail(line, o.text + " is not a scalar");
    return it->second;
  }
  int64_t integer(int line, const std::string& x) const {
    const dyn::Scalar s = scalar(line, Operand{x, false, {}});
    if (!s.is_int) fail(line, x + " is not an integer");
    return s.i;
  }

  // A window of a global tensor: indices fix every dim; the last two dims span the valid shape
  // of the instruction's first tile operand (rows x cols).
  dyn::AnyGlobal window(int line, const Operand& o, const dyn::AnyTile* shape_from) const {
    const Tensor& t = tensors_.at(o.text);
    const int rank = int(t.shape.size());
    dyn::AnyGlobal g{t.dtype, t.data, {1, 1, 1, 1, 1}, {0, 0, 0, 0, 0}};
    for (int i = 0; i < rank; ++i) {
      g.shape[5 - rank + i] = t.shape[i];
      g.stride[5 - rank + i] = t.strides[i];
    }
    if (!o.indexed) return g;  // the whole tensor
    if (int(o.index.size()) != rank)
      fail(line, o.text + " needs " + std::to_string(rank) + " indices");
    if (!shape_from) fail(line, "a tensor window needs a tile operand to take its shape from");
    const int64_t ext[2] = {shape_from->valid_rows, shape_from->valid_cols};
    if (rank == 1 && ext[0] != 1) fail(line, "a 1-D tensor window must be one row");
    char* p = static_cast<char*>(t.data);
    for (int i = 0; i < rank; ++i) {
      const int64_t at = integer(line, o.index[i]);
      const int64_t len = i == rank - 1 ? ext[1] : (i == rank - 2 ? ext[0] : 1);
      if (at < 0 || at + len > t.shape[i])
        fail(line, o.text + ": window [" + std::to_string(at) + ", " + std::to_string(at + len) +
                       ") exceeds dim " + std::to_string(i) + " of size " +
                       std::to_string(t.shape[i]));
      p += at * t.strides[i] * int64_t(dtype_size(t.dtype));
      g.shape[5 - rank + i] = len;
    }
    g.data = p;
    return g;
  }

  void instr(const Stmt& s) {
    dyn::Call call;
    call.name = s.op;
    std::transform(call.name.begin(), call.name.end(), call.name.begin(),
                   [](unsigned char ch) { return char(std::toupper(ch)); });
    const dyn::AnyTile* first_tile = nullptr;
    for (const Operand& o : s.operands) {
      auto ti = tiles_.find(o.text);
      if (ti != tiles_.end()) {
        if (o.indexed) fail(s.line, "tiles take no indices");
        if (!first_tile) first_tile = &ti->second.tile;
      }
    }
    bool other_layout = false;
    for (const Operand& o : s.operands)
      if (auto ti = tiles_.find(o.text); ti != tiles_.end())
        other_layout |= ti->second.type.layout != Layout::RowMajor;
    if (other_layout) return layout_instr(s, call.name);
    for (const Operand& o : s.operands) {
      if (auto ti = tiles_.find(o.text); ti != tiles_.end()) {
        call.args.push_back(ti->second.tile);
      } else if (tensors_.count(o.text)) {
        call.args.push_back(window(s.line, o, first_tile));
      } else if (auto fi = fifos_.refs.find(o.text); fi != fifos_.refs.end()) {
        call.args.push_back(fi->second);
      } else {
        call.args.push_back(scalar(s.line, o));
      }
    }
    for (const auto& [k, v] : s.attrs) call.attrs[k] = v;
    try {
      dyn::call(call);
    } catch (const Error& e) {
      fail(s.line, e.what());
    }
  }

  // Element offset of (r, c) in a tile of any layout (as Tile::offset).
  static size_t offset(const TileType& t, int r, int c) {
    if (t.layout == Layout::RowMajor) return size_t(r) * t.cols + c;
    if (t.layout == Layout::ColMajor) return size_t(c) * t.rows + r;
    const int fc = int(32 / dtype_size(t.dtype));
    const size_t block = size_t(c / fc) * (t.rows / 16) + r / 16;
    return block * (16 * fc) + size_t(r % 16) * fc + c % fc;
  }

  const TileSlot& tile_operand(const Stmt& s, size_t i) const {
    if (i >= s.operands.size()) fail(s.line, s.op + ": missing operand");
    auto ti = tiles_.find(s.operands[i].text);
    if (ti == tiles_.end()) fail(s.line, s.operands[i].text + " is not a tile");
    const TileType& t = ti->second.type;
    if (t.layout == Layout::NZ && (t.rows % 16 != 0 || t.cols % int(32 / dtype_size(t.dtype)) != 0))
      fail(s.line, s.operands[i].text + ": NZ tiles must be whole 16 x 32-byte fractals");
    return ti->second;
  }

  // Non-row-major tiles (cube operands): TMOV converts layouts element by element, and the
  // TMATMUL family reads Left / Right operands in any layout; the rest take row-major tiles.
  void layout_instr(const Stmt& s, const std::string& name) {
    if (name == "TMOV") {
      if (s.operands.size() != 2) fail(s.line, "tmov takes dst, src");
      const TileSlot &d = tile_operand(s, 0), &x = tile_operand(s, 1);
      if (d.type.dtype != x.type.dtype) fail(s.line, "tmov between layouts keeps the dtype");
      const int vr = d.tile.valid_rows, vc = d.tile.valid_cols;
      if (x.tile.valid_rows < vr || x.tile.valid_cols < vc)
        fail(s.line, "tmov: src valid region does not cover dst");
      const size_t e = dtype_size(d.type.dtype);
      for (int r = 0; r < vr; ++r)
        for (int c = 0; c < vc; ++c)
          std::memcpy(d.mem.get() + offset(d.type, r, c) * e,
                      x.mem.get() + offset(x.type, r, c) * e, e);
      return;
    }
    const bool bias = name == "TMATMUL_BIAS";
    const int init = name == "TMATMUL_ACC" ? 1 : bias ? 2 : 0;
    if (name != "TMATMUL" && name != "TMATMUL_ACC" && !bias && name != "TGEMV")
      fail(s.line, "only tmov and the tmatmul family take non-row-major tiles");
    if (s.operands.size() != (bias ? 4u : 3u)) fail(s.line, s.op + ": wrong operand count");
    const TileSlot &c = tile_operand(s, 0), &a = tile_operand(s, 1), &b = tile_operand(s, 2);
    if (c.type.layout != Layout::RowMajor) fail(s.line, s.op + ": the accumulator is row-major");
    if (a.type.dtype != b.type.dtype) fail(s.line, s.op + ": left and right dtypes differ");
    if (name == "TGEMV" && c.tile.valid_rows != 1) fail(s.line, "tgemv: dst must be one row");
    visit_dtype(a.type.dtype, [&](auto tag) {
      using In = typename decltype(tag)::type;
      if constexpr (is_float_v<In> || std::is_same_v<In, int8_t> || std::is_same_v<In, uint8_t>) {
        using Acc = std::conditional_t<is_float_v<In>, float, int32_t>;
        if (c.type.dtype != dtype_of<Acc>())
          fail(s.line, s.op + ": accumulator must be " + dyn::short_name(dtype_of<Acc>()));
        auto view = [](const TileSlot& t) {
          return fast::MatView<In>{static_cast<const In*>(t.tile.data),
                                   t.tile.rows,
                                   t.tile.cols,
                                   t.type.layout == Layout::ColMajor ? t.tile.rows : t.tile.stride,
                                   t.type.layout,
                                   t.tile.valid_rows,
                                   t.tile.valid_cols};
        };
        std::vector<Acc> row;
        if (bias) {
          const TileSlot& bt = tile_operand(s, 3);
          if (bt.type.layout != Layout::RowMajor || bt.type.dtype != c.type.dtype)
            fail(s.line, s.op + ": bias is a row-major row of the accumulator dtype");
          const TileRef<Acc> br = bt.tile.template as<Acc>();
          if (br.valid_cols < c.tile.valid_cols) fail(s.line, s.op + ": bias is too short");
          row.assign(br.row(0), br.row(0) + c.tile.valid_cols);
        }
        try {
          fast::matmul(c.tile.template as<Acc>(), view(a), view(b), init, row.data());
        } catch (const Error& e) {
          fail(s.line, e.what());
        }
      } else {
        fail(s.line, s.op + " does not support dtype " + dtype_name(a.type.dtype));
      }
    });
  }

  static Pipe pipe(const std::string& p) {
    static const std::map<std::string, Pipe> m = {
        {"s", Pipe::S},       {"v", Pipe::V},       {"m", Pipe::M},     {"mte1", Pipe::MTE1},
        {"mte2", Pipe::MTE2}, {"mte3", Pipe::MTE3}, {"fix", Pipe::FIX}, {"all", Pipe::ALL}};
    auto it = m.find(p);
    if (it == m.end()) throw Error("unknown pipe '" + p + "'");
    return it->second;
  }

  void exec(const std::vector<Stmt>& body) {
    for (const Stmt& s : body) {
      switch (s.kind) {
        case Stmt::INSTR: instr(s); break;
        case Stmt::FOR: {
          const int64_t lo = integer(s.line, s.operands[0].text);
          const int64_t hi = integer(s.line, s.operands[1].text);
          const int64_t step = s.operands.size() > 2 ? integer(s.line, s.operands[2].text) : 1;
          if (step <= 0) fail(s.line, "loop step must be positive");
          for (int64_t i = lo; i < hi; i += step) {
            scalars_[s.result] = dyn::Scalar::of_int(i);
            exec(s.body);
          }
          break;
        }
        case Stmt::SCALAR: {
          if (s.operands.size() != 2) fail(s.line, s.op + " takes two operands");
          const dyn::Scalar a = scalar(s.line, s.operands[0]), b = scalar(s.line, s.operands[1]);
          scalars_[s.result] = arith(s, a, b);
          break;
        }
        case Stmt::VALID: {
          if (s.operands.size() != 3) fail(s.line, "set_valid takes a tile, rows, cols");
          auto ti = tiles_.find(s.operands[0].text);
          if (ti == tiles_.end()) fail(s.line, s.operands[0].text + " is not a tile");
          TileSlot& t = ti->second;
          const int64_t r = integer(s.line, s.operands[1].text);
          const int64_t c = integer(s.line, s.operands[2].text);
          if (r < 0 || r > t.type.rows || c < 0 || c > t.type.cols)
            fail(s.line, "valid shape exceeds the tile");
          if ((t.type.valid_rows >= 0 && r != t.type.valid_rows) ||
              (t.type.valid_cols >= 0 && c != t.type.valid_cols))
            fail(s.line, "only dynamic (?) valid dims can change");
          t.tile.valid_rows = int(r), t.tile.valid_cols = int(c);
          break;
        }
        case Stmt::FLAG: {
          try {
            if (s.op == "pipe_barrier") {
              if (s.operands.size() != 1) fail(s.line, "pipe_barrier takes a pipe");
              pipe_barrier(pipe(s.operands[0].text));
            } else {
              if (s.operands.size() != 3) fail(s.line, s.op + " takes src pipe, dst pipe, event");
              const Pipe a = pipe(s.operands[0].text), b = pipe(s.operands[1].text);
              const int ev = int(integer(s.line, s.operands[2].text));
              if (s.op == "set_flag") set_flag(a, b, ev);
              else wait_flag(a, b, ev);
            }
          } catch (const Error& e) {
            fail(s.line, e.what());
          }
          break;
        }
      }
    }
  }

  dyn::Scalar arith(const Stmt& s, dyn::Scalar a, dyn::Scalar b) const {
    if (a.is_int && b.is_int) {
      const int64_t x = a.i, y = b.i;
      if ((s.op == "div" || s.op == "rem") && y == 0) fail(s.line, "division by zero");
      if (s.op == "add") return dyn::Scalar::of_int(x + y);
      if (s.op == "sub") return dyn::Scalar::of_int(x - y);
      if (s.op == "mul") return dyn::Scalar::of_int(x * y);
      if (s.op == "div") return dyn::Scalar::of_int(x / y);
      if (s.op == "rem") return dyn::Scalar::of_int(x % y);
      if (s.op == "min") return dyn::Scalar::of_int(std::min(x, y));
      if (s.op == "max") return dyn::Scalar::of_int(std::max(x, y));
    } else {
      const double x = a.f, y = b.f;
      if (s.op == "add") return dyn::Scalar::of_float(x + y);
      if (s.op == "sub") return dyn::Scalar::of_float(x - y);
      if (s.op == "mul") return dyn::Scalar::of_float(x * y);
      if (s.op == "div") return dyn::Scalar::of_float(x / y);
      if (s.op == "rem") return dyn::Scalar::of_float(std::fmod(x, y));
      if (s.op == "min") return dyn::Scalar::of_float(std::min(x, y));
      if (s.op == "max") return dyn::Scalar::of_float(std::max(x, y));
    }
    fail(s.line, "unknown scalar op '" + s.op + "'");
  }

  const Kernel& k_;
  Fifos& fifos_;
  std::map<std::string, Tensor> tensors_;
  std::map<std::string, dyn::Scalar> scalars_;
  std::map<std::string, TileSlot> tiles_;
};

}  // namespace detail

// Runs every kernel of the module (concurrently when there are several). The first error is
// rethrown after all kernels stopped; FIFOs are closed on error so no kernel stays blocked.
inline void run(const Module& m, Bindings& b) {
  detail::Fifos fifos;
  for (const FifoDecl& f : m.fifos) {
    visit_dtype(f.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      auto q = std::make_shared<TileFifo<T>>(f.depth, f.rows, f.cols);
      fifos.refs[f.name] = dyn::AnyFifo{f.dtype, q.get()};
      fifos.close_all.push_back([q] { q->close(); });
      fifos.owned[f.name] = q;
    });
  }
  PTO_CHECK(!m.kernels.empty(), "module has no kernel");
  std::vector<std::unique_ptr<detail::KernelRun>> runs;
  for (const Kernel& k : m.kernels)
    runs.push_back(std::make_unique<detail::KernelRun>(k, b, fifos));
  if (runs.size() == 1) return runs[0]->run();
  std::mutex mu;
  std::exception_ptr first;
  std::vector<std::thread> threads;
  for (auto& r : runs)
    threads.emplace_back([&, run = r.get()] {
      try {
        run->run();
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!first) first = std::current_exception();
        for (auto& close : fifos.close_all) close();
      }
    });
  for (auto& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

inline void run(const std::string& text, Bindings& b) { run(parse(text), b); }

}  // namespace PTO_ISA_NS
}  // namespace pto::as
