// Typed names of block-level instructions and of the places they run: every PTO instruction of
// the one list (include/pto/isa_list.hpp), plus the compiler's own TBROADCAST and LOOP; the
// memory spaces of tile buffers; the core kinds of kernels.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "ir/dtype.h"
#include "pto/isa_list.hpp"
#include "pto/round.hpp"
#include "pto/types.hpp"

namespace pypto {

enum class Opcode : uint16_t {
#define PYPTO_OPCODE(NAME, FORM, DTYPES) NAME,
  PTO_INSTRUCTIONS(PYPTO_OPCODE)
#undef PYPTO_OPCODE
      TBROADCAST,  // N-D broadcast of a tile into a larger one (its size-1 dims repeat)
  TSCATTERND,      // a tile into global memory along `axis` at the rows an index tile names (pypto/index_nd.hpp)
  TGATHERND,       // a tile from global memory along `axis` at the rows an index tile names (pypto/index_nd.hpp)
  TPHILOX,  // uniform random numbers of flat elements coord[0].. (key coord[1], offset coord[2]; pypto/random.hpp)
  // The signals of distributed programs (pypto/dist_signal.hpp), on one int32 cell of a window
  // parameter at `coord`: TNOTIFY sets or atomically adds `scalar_int` and wakes its waiters;
  // TWAIT sleeps until `cell cmp scalar_int` holds (then subtracts it with `notify` AtomicAdd:
  // a barrier consumes its tokens). Kernels holding one are fences (Kernel::fence).
  TNOTIFY,
  TWAIT,
  LOOP,  // Instr::body runs for Instr::var in [0, Instr::trip)
};

using InstrForm = pto::isa::Form;
using InstrDtypes = pto::isa::Dtypes;
/// The comparison of TCMP / TCMPS (EQ NE LT LE GT GE).
using CmpMode = pto::CmpMode;
const char* CmpModeName(CmpMode m);
/// The rounding of TCVT (RINT ROUND FLOOR CEIL TRUNC; PyPTO's CastMode).
using RoundMode = pto::RoundMode;
const char* RoundModeName(RoundMode m);

const char* OpcodeName(Opcode op);
std::optional<Opcode> ParseOpcode(std::string_view name);
/// How the instruction reads its operands (Special for TBROADCAST and LOOP).
InstrForm FormOf(Opcode op);
InstrDtypes DtypesOf(Opcode op);
/// Whether instructions of dtype class `d` take tiles of `t`; what the class asks for, in words.
bool Admits(InstrDtypes d, DataType t);
const char* DtypesDescription(InstrDtypes d);
/// Whether a tile-scalar instruction also has the scalar/tile form dst = scalar op src.
bool HasScalarFirstForm(Opcode op);
inline bool IsRowReduction(Opcode op) { return FormOf(op) == InstrForm::RowReduce; }
inline bool IsColReduction(Opcode op) { return FormOf(op) == InstrForm::ColReduce; }
inline std::ostream& operator<<(std::ostream& os, Opcode op) { return os << OpcodeName(op); }

/// How TNOTIFY writes its cell (hw-native-sys's pld.NotifyOp; CANN's shmem_signal AtomicType).
enum class NotifyOp : uint8_t { Set, AtomicAdd };
const char* NotifyOpName(NotifyOp op);

/// Where a tile buffer lives: UB for vector work, the cube's L1 (Mat), L0A (Left), L0B (Right)
/// and L0C (Acc).
enum class MemSpace : uint8_t { Vec, Mat, Left, Right, Acc };
const char* MemSpaceName(MemSpace s);
inline std::ostream& operator<<(std::ostream& os, MemSpace s) { return os << MemSpaceName(s); }

/// The core kind a kernel runs on: AIV (vector) or AIC (cube).
enum class CoreKind : uint8_t { AIV, AIC };
const char* CoreKindName(CoreKind c);
inline std::ostream& operator<<(std::ostream& os, CoreKind c) { return os << CoreKindName(c); }

}  // namespace pypto
