// Level 2: the block graph. Partition groups tile ops that share an iteration grid into
// kernels; a kernel is a list of PTO instructions on tile buffers of the on-chip buffer (UB),
// run once per grid coordinate. Values that cross kernels become global-memory workspaces.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/opcode.h"
#include "ir/tile_graph.h"

namespace pypto {

/// Names of the grid coordinate variables inside kernels: "$c0", "$c1", ...; "$r" is the
/// index of a reduction loop over tiles.
std::string GridVar(int dim);
extern const char* const kReduceVar;
/// The inner loop of a cube kernel: the L0 step within one L1 step of K.
extern const char* const kInnerKVar;

/// A tile in the on-chip buffer.
struct TileBuf {
  int id = -1;
  std::string name;
  DataType dtype = DataType::FP32;
  std::vector<int64_t> shape;  // static N-D tile shape (row-major, dense)
  std::vector<Expr> valid;     // valid extent per dim, over grid vars and program symbols
  int value = -1;              // the tensor value whose tile this holds, -1 for scratch
  MemSpace space = MemSpace::Vec;
  int64_t offset = -1;  // byte offset in UB (AllocateBuffers)
  int64_t bytes() const;
  int64_t rows() const;  // product of all dims but the last
  int64_t cols() const { return shape.empty() ? 1 : shape.back(); }
};

/// A global-memory tensor a kernel reads or writes. `tile` is the tile grid used to address it.
struct KernelParam {
  int value = -1;
  bool read = false;
  bool write = false;
  // For each kernel (iteration) dim, the dim of the value it addresses; -1 for a dim of
  // extent 1 the value does not have (lower-rank operands, reductions without keepdim).
  std::vector<int> dim_map;
};

struct Instr {
  Opcode opcode = Opcode::LOOP;  // a PTO instruction (TLOAD, TADD, TROWMAX, ...) or LOOP
  int dst = -1;
  std::vector<int> srcs;
  int param = -1;           // TLOAD/TSTORE: index into Kernel::params
  std::vector<Expr> coord;  // TLOAD/TSTORE: element offset of the tile in the param, per dim
  bool has_scalar = false;  // tile-scalar instructions (TADDS, ...) take `scalar`
  double scalar = 0;
  // An integer the program gave, exactly (a double holds integers up to 2^53 only); a uint64
  // above 2^63 as its two's-complement bits. Integer tiles read it through IntScalar().
  std::optional<int64_t> scalar_int;
  Expr scalar_expr;                   // TEXPANDS: a run-time scalar (of program symbols) in place of `scalar`
  bool scalar_first = false;          // TSUBS/TDIVS in scalar/tile form: dst = scalar op src
  DataType dtype = DataType::FP32;    // TCVT destination
  int axis = -1;                      // column reductions and broadcasts: the tile axis
  bool transpose = false;             // TEXTRACT: the window is read transposed (L1 -> L0 with transpose)
  CmpMode cmp = CmpMode::EQ;          // TCMP / TCMPS / TWAIT: the comparison
  NotifyOp notify = NotifyOp::Set;    // TNOTIFY: set or add; TWAIT: AtomicAdd consumes what it waited for
  bool atomic_add = false;            // TSTORE: adds into memory atomically (ranks adding into one window)
  RoundMode round = RoundMode::RINT;  // TCVT: the rounding
  // TSCATTERND / TGATHERND: how an index error names the user's op ("pypto.index_put_", ...).
  std::string what;
  // LOOP: `body` runs for `var` in [0, trip).
  std::string var;
  Expr trip;
  std::vector<Instr> body;
  SourceLoc loc;

  /// The scalar of an integer tile: the program's integer when it gave one, else the double's.
  int64_t IntScalar() const { return scalar_int ? *scalar_int : static_cast<int64_t>(scalar); }
  /// The scalar as the dumps print it: the exact integer when there is one.
  std::string ScalarText() const;
};

struct Kernel {
  int id = -1;
  std::string name;
  CoreKind core = CoreKind::AIV;  // the core that runs it: AIV (vector) or AIC (cube)
  std::vector<Expr> grid;         // number of tiles along each grid dim
  std::vector<KernelParam> params;
  std::vector<TileBuf> bufs;
  std::vector<Instr> body;
  int64_t ub_bytes = 0;       // after AllocateBuffers
  std::vector<int> tile_ops;  // the tile ops it runs, in order
  std::string reason;         // why partition made this kernel
  // A cube kernel whose L0 tiles are smaller than its L1 block along m and n: its Left / Right /
  // Acc buffers hold l0_blocks_m (x l0_blocks_n) L0 tiles, which the NPU runs one after another
  // and the host computes at once (docs/ARCHITECTURE.md, "Cube tiles").
  int64_t l0_blocks_m = 1, l0_blocks_n = 1;
  // A signal kernel (TNOTIFY / TWAIT): it runs after every earlier launch of the call has
  // finished and before any later one starts, so the memory other ranks read or wrote is
  // ordered by the signals as the program wrote them (docs/ARCHITECTURE.md, "Distributed").
  bool fence = false;
};

struct Launch {
  int id = -1;
  int kernel = -1;
};

struct BlockGraph {
  Function fn;
  std::vector<Kernel> kernels;
  Region<Launch> body;
};

/// Adds the readers of each buffer in `body` (loops included) to `reads`.
void CountReads(const std::vector<Instr>& body, std::map<int, int>& reads);

std::string PrintKernel(const Function& fn, const Kernel& k);
std::string PrintBlockGraph(const BlockGraph& g);

/// Level 3: the execution graph: the control program (loops over launches) and, for each
/// launch, the tensors it reads and writes and the launches it waits for in its iteration.
struct LaunchNode {
  int id = -1;
  int kernel = -1;
  std::vector<int> reads, writes;  // value ids (views resolved at run time)
  std::vector<int> deps;           // ids of earlier launches in the same region it depends on
  // Earlier launches of the same run (no loop between) with the same grid that touch every
  // tensor shared with this one (with a writer) at the same window per grid point: point p
  // here needs only their point p, so the runtime runs them depth first, point by point.
  std::vector<int> pointwise_after;
  std::string pointwise_reason;  // why a dependency in `deps` is not point-wise
};

/// One root tensor as one grid point of a kernel touches it: its windows in the root's
/// coordinates, over grid vars ("$c0", ...), loop indices and program symbols.
struct PointAccess {
  int root = -1;
  bool write = false;
  bool regular = true;  // false: several tiles per point (a K loop, a split reduction)
  bool adds = false;    // a TSTORE adds into the window (atomic_add): its old contents count
  // Distinct windows, each {start0, extent0, start1, extent1, ...}.
  std::vector<std::vector<Expr>> windows;
  std::vector<std::string> keys;        // canonical text of each window
  bool names_other_vars = false;        // a window names a loop index or symbol (keys differ per launch)
  std::vector<std::string> other_vars;  // those names, sorted
};

/// Why point p of a launch of `b` may not wait for point p of a launch of `a` alone ("" if it
/// may): some tensor the two share with a writer is not touched at one and the same window
/// per point, or the written window does not tell the points apart. `env_a`/`env_b` bind the
/// loop indices of the two launches (null: compare the windows as written).
std::string PointwiseBlocker(const Function& fn, const std::vector<PointAccess>& a, const std::vector<PointAccess>& b,
                             const std::vector<int64_t>* grid, const SymEnv* env_a, const SymEnv* env_b);

struct ExecGraph {
  Function fn;
  std::vector<Kernel> kernels;
  Region<LaunchNode> body;
  int num_launches = 0;
  std::vector<std::vector<PointAccess>> point_access;  // by kernel id
  // Workspaces every reader of which is linked point-wise to their writer: one buffer each
  // (the others alternate between two; see the runtime).
  std::set<int> single_buffer;
};

std::string PrintExecGraph(const ExecGraph& g);

}  // namespace pypto
