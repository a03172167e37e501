#include "ir/opcode.h"

#include <unordered_map>

namespace pypto {

const char* OpcodeName(Opcode op) {
  switch (op) {
    case Opcode::TBROADCAST:
      return "TBROADCAST";
    case Opcode::TSCATTERND:
      return "TSCATTERND";
    case Opcode::TGATHERND:
      return "TGATHERND";
    case Opcode::TPHILOX:
      return "TPHILOX";
    case Opcode::TNOTIFY:
      return "TNOTIFY";
    case Opcode::TWAIT:
      return "TWAIT";
    case Opcode::LOOP:
      return "LOOP";
    default:
      return pto::isa::kInfo[static_cast<int>(op)].name;
  }
}

std::optional<Opcode> ParseOpcode(std::string_view name) {
  static const std::unordered_map<std::string_view, Opcode> by_name = [] {
    std::unordered_map<std::string_view, Opcode> m;
    for (int i = 0; i <= static_cast<int>(Opcode::LOOP); ++i)
      m[OpcodeName(static_cast<Opcode>(i))] = static_cast<Opcode>(i);
    return m;
  }();
  auto it = by_name.find(name);
  if (it == by_name.end()) return std::nullopt;
  return it->second;
}

const char* NotifyOpName(NotifyOp op) { return op == NotifyOp::Set ? "Set" : "AtomicAdd"; }

InstrForm FormOf(Opcode op) {
  if (static_cast<int>(op) >= pto::isa::kCount) return InstrForm::Special;
  return pto::isa::kInfo[static_cast<int>(op)].form;
}

InstrDtypes DtypesOf(Opcode op) {
  if (static_cast<int>(op) >= pto::isa::kCount) return InstrDtypes::A;
  return pto::isa::kInfo[static_cast<int>(op)].dtypes;
}

bool Admits(InstrDtypes d, DataType t) {
  if (IsStorageOnly(t)) return d == InstrDtypes::A;
  const bool is_bool = t == DataType::BOOL, is_float = IsFloat(t);
  switch (d) {
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

const char* DtypesDescription(InstrDtypes d) {
  switch (d) {
    case InstrDtypes::F:
      return "a floating-point tensor (fp32, fp16, bf16)";
    case InstrDtypes::I:
      return "an integer tensor";
    case InstrDtypes::N:
      return "a numeric (not bool) tensor";
    case InstrDtypes::B:
      return "an integer or bool tensor";
    case InstrDtypes::A:
      return "a tensor";
  }
  return "a tensor";
}

bool HasScalarFirstForm(Opcode op) {
  switch (op) {
    case Opcode::TSUBS:
    case Opcode::TDIVS:
#define PYPTO_SCALAR_FIRST(X, NAME, SNAME, DTYPES, FN, IMPL) case Opcode::SNAME:
      PTO_MATH_BINARY(PYPTO_SCALAR_FIRST, _)
#undef PYPTO_SCALAR_FIRST
      return true;
    default:
      return false;
  }
}

const char* CmpModeName(CmpMode m) {
  constexpr const char* names[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
  return names[static_cast<int>(m)];
}

const char* RoundModeName(RoundMode m) {
  constexpr const char* names[] = {"RINT", "ROUND", "FLOOR", "CEIL", "TRUNC"};
  return names[static_cast<int>(m)];
}

const char* MemSpaceName(MemSpace s) {
  switch (s) {
    case MemSpace::Vec:
      return "Vec";
    case MemSpace::Mat:
      return "Mat";
    case MemSpace::Left:
      return "Left";
    case MemSpace::Right:
      return "Right";
    case MemSpace::Acc:
      return "Acc";
  }
  return "?";
}

const char* CoreKindName(CoreKind c) { return c == CoreKind::AIC ? "AIC" : "AIV"; }

}  // namespace pypto
