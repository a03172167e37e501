#include "passes/allocate_buffers.h"

#include <algorithm>

namespace pypto {

namespace {

struct Interval {
  int buf;
  int start = -1, end = -1;
};

void Touch(std::vector<Interval>& live, int buf, int pos) {
  if (buf < 0) return;
  Interval& iv = live[buf];
  if (iv.start < 0) iv.start = pos;
  iv.end = std::max(iv.end, pos);
}


// A LOOP counts as one position: everything used inside it is live for the whole loop.
void Scan(const std::vector<Instr>& body, std::vector<Interval>& live, int& pos, int loop_pos) {
  for (size_t i = 0; i < body.size(); ++i) {
    const Instr& in = body[i];
    int p = loop_pos >= 0 ? loop_pos : pos;
    if (in.opcode == Opcode::LOOP) {
      Scan(in.body, live, pos, p);
    } else {
      Touch(live, in.dst, p);
      // An elementwise result reduced by the next instruction: code generation fuses the two
      // into one pass, which reads these sources while it writes the reduction, so they stay
      // live one position longer (the reduction's small result must not land on them).
      bool closing = i + 1 < body.size() && IsRowReduction(body[i + 1].opcode) && !body[i + 1].srcs.empty() &&
                     body[i + 1].srcs[0] == in.dst && in.dst >= 0;
      for (int s : in.srcs) Touch(live, s, closing && loop_pos < 0 ? p + 1 : p);
    }
    if (loop_pos < 0) ++pos;
  }
}

int64_t AlignUp(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

// Places the buffers of one memory space; returns its high-water mark in bytes.
int64_t PlaceSpace(Kernel& k, const std::vector<Interval>& live, MemSpace space, int64_t align) {
  // Greedy by size (as TFLite's arena planner): place the largest buffers first, each at the
  // lowest offset free over its whole live range. Small buffers then fill the gaps between
  // big ones instead of splitting the holes big ones need.
  std::vector<Interval> order;
  for (auto& iv : live)
    if (iv.start >= 0 && k.bufs[iv.buf].space == space) order.push_back(iv);
  std::sort(order.begin(), order.end(), [&](const Interval& a, const Interval& b) {
    int64_t sa = k.bufs[a.buf].bytes(), sb = k.bufs[b.buf].bytes();
    if (sa != sb) return sa > sb;
    return a.start != b.start ? a.start < b.start : a.buf < b.buf;
  });
  struct Placed {
    int64_t off, size;
    int start, end;
  };
  std::vector<Placed> placed;
  int64_t high = 0;
  for (auto& iv : order) {
    int64_t size = AlignUp(k.bufs[iv.buf].bytes(), align);
    std::vector<std::pair<int64_t, int64_t>> busy;  // [off, off + size) of time-overlapping buffers
    for (auto& p : placed)
      if (p.start <= iv.end && iv.start <= p.end) busy.push_back({p.off, p.off + p.size});
    std::sort(busy.begin(), busy.end());
    int64_t off = 0;
    for (auto& [lo, hi] : busy) {
      if (off + size <= lo) break;
      off = std::max(off, hi);
    }
    k.bufs[iv.buf].offset = off;
    placed.push_back({off, size, iv.start, iv.end});
    high = std::max(high, off + size);
  }
  return high;
}

}  // namespace

void AllocateBuffers(BlockGraph& g, PassContext& ctx) {
  const MachineModel& m = ctx.machine();
  const int64_t align = m.ub_align;
  // Each memory space is allocated on its own; in the worker's scratch the spaces follow one
  // another (UB first), so a buffer's offset is absolute there.
  struct Space {
    MemSpace space;
    int64_t capacity;
    const char* hint;
  };
  const Space spaces[] = {
      {MemSpace::Vec, m.ub_bytes, "reduce the tile with pypto.set_vec_tile_shapes"},
      {MemSpace::Mat, m.l1_bytes, "use smaller sizes in pypto.set_cube_tile_shapes"},
      {MemSpace::Left, m.l0a_bytes, "use smaller sizes in pypto.set_cube_tile_shapes"},
      {MemSpace::Right, m.l0b_bytes, "use smaller sizes in pypto.set_cube_tile_shapes"},
      {MemSpace::Acc, m.l0c_bytes, "use smaller sizes in pypto.set_cube_tile_shapes"},
  };
  for (auto& k : g.kernels) {
    // The L0 buffers of a kernel with an m / n split of L0 hold several L0 tiles (one each on the
    // NPU, in turn): each must fit, so the space counts that many times.
    auto blocks = [&](MemSpace s) -> int64_t {
      return s == MemSpace::Left ? k.l0_blocks_m
             : s == MemSpace::Right ? k.l0_blocks_n
             : s == MemSpace::Acc   ? k.l0_blocks_m * k.l0_blocks_n
                                    : 1;
    };
    std::vector<Interval> live(k.bufs.size());
    for (size_t i = 0; i < live.size(); ++i) live[i].buf = static_cast<int>(i);
    int pos = 0;
    Scan(k.body, live, pos, -1);
    int64_t base = 0;
    for (const Space& sp : spaces) {
      int64_t high = PlaceSpace(k, live, sp.space, align);
      if (high > sp.capacity * blocks(sp.space)) {
        SourceLoc loc = k.body.empty() ? SourceLoc{} : k.body.front().loc;
        std::string what = sp.space == MemSpace::Vec ? "UB" : MemSpaceName(sp.space);
        std::string per = blocks(sp.space) > 1 ? " (" + std::to_string(high / blocks(sp.space) / 1024) +
                                                     " KiB per L0 tile)"
                                               : "";
        throw UserError("kernel " + k.name + " needs " + std::to_string(high / 1024) + " KiB of " + what + per +
                            ", more than the " + std::to_string(sp.capacity / 1024) + " KiB of " + m.name,
                        loc, sp.hint);
      }
      for (auto& b : k.bufs)
        if (b.space == sp.space && b.offset >= 0) b.offset += base;
      base += AlignUp(high, 64);  // each space starts on a cache line
    }
    for (auto& b : k.bufs)
      PYPTO_CHECK(b.offset >= 0 || live[b.id].start < 0, "buffer ", b.name, " in unknown space ", MemSpaceName(b.space));
    k.ub_bytes = base;
  }
}

}  // namespace pypto
