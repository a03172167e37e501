#include "passes/fuse_instructions.h"

#include <map>
#include <utility>

namespace pypto {

namespace {

void FuseExpDif(std::vector<Instr>& body, const std::map<int, int>& reads) {
  for (size_t i = 0; i + 1 < body.size(); ++i) {
    Instr& sub = body[i];
    Instr& ex = body[i + 1];
    bool row = sub.opcode == Opcode::TROWEXPANDSUB, col = sub.opcode == Opcode::TCOLEXPANDSUB;
    if (!(row || col) || ex.opcode != Opcode::TEXP || ex.srcs.size() != 1 || ex.srcs[0] != sub.dst) continue;
    auto it = reads.find(sub.dst);
    if (it == reads.end() || it->second != 1) continue;
    ex.opcode = row ? Opcode::TROWEXPANDEXPDIF : Opcode::TCOLEXPANDEXPDIF;
    ex.srcs = sub.srcs;
    body.erase(body.begin() + i);
  }
  for (auto& in : body) FuseExpDif(in.body, reads);
}

// A store between the instruction making a tile and a row reduction of that tile moves below
// the reduction: the tile is live through it anyway, so this costs no UB, and code generation
// can then fuse the producer with the reduction (one pass over the tile instead of two).
void SinkStores(std::vector<Instr>& body) {
  for (auto& in : body) SinkStores(in.body);
  for (size_t i = 0; i + 1 < body.size(); ++i) {
    const Instr& next = body[i + 1];
    bool row_reduction =
        next.opcode == Opcode::TROWSUM || next.opcode == Opcode::TROWMAX || next.opcode == Opcode::TROWMIN;
    if (body[i].opcode == Opcode::TSTORE && row_reduction && next.srcs.size() == 1 && next.srcs[0] == body[i].srcs[0]) {
      std::swap(body[i], body[i + 1]);
      ++i;
    }
  }
}

void ReciprocalDivision(Kernel& k, std::vector<Instr>& body) {
  for (size_t i = 0; i < body.size(); ++i) {
    if (!body[i].body.empty()) ReciprocalDivision(k, body[i].body);
    bool row = body[i].opcode == Opcode::TROWEXPANDDIV, col = body[i].opcode == Opcode::TCOLEXPANDDIV;
    bool scalar_first = body[i].opcode == Opcode::TDIVS && body[i].scalar_first;
    if (!(row || col || scalar_first)) continue;
    const int divisor = scalar_first ? body[i].srcs[0] : body[i].srcs[1];
    const TileBuf& b = k.bufs[divisor];
    if (!IsFloat(b.dtype)) continue;
    TileBuf r = b;
    r.id = static_cast<int>(k.bufs.size());
    r.name = b.name + "_recip";
    r.value = -1;
    k.bufs.push_back(r);
    Instr recip;
    recip.opcode = Opcode::TRECIP;
    recip.dst = r.id;
    recip.srcs = {divisor};
    recip.loc = body[i].loc;
    if (scalar_first) {
      body[i].opcode = Opcode::TMULS;
      body[i].scalar_first = false;
      body[i].srcs[0] = r.id;
    } else {
      body[i].opcode = row ? Opcode::TROWEXPANDMUL : Opcode::TCOLEXPANDMUL;
      body[i].srcs[1] = r.id;
    }
    body.insert(body.begin() + i, recip);
    ++i;
  }
}

}  // namespace

void FuseInstructions(BlockGraph& g, PassContext& ctx) {
  for (auto& k : g.kernels) {
    std::map<int, int> reads;
    CountReads(k.body, reads);
    FuseExpDif(k.body, reads);
    SinkStores(k.body);
    if (ctx.options().reciprocal_division) ReciprocalDivision(k, k.body);
  }
}

}  // namespace pypto
