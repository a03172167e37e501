#include "ir/opcode.h"

#include <unordered_map>

namespace pypto {

const char* OpcodeName(Opcode op) {
  switch (op) {
    case Opcode::TBROADCAST:
      return "TBROADCAST";
    case Opcode::LOOP:
      return "LOOP";
    default:
      return pto::isa::kInfo[static_cast<int>(op)].name;
  }
}

std::optional<Opcode> ParseOpcode(std::string_view name) {
  static const std::unordered_map<std::string_view, Opcode> by_name = [] {
    std::unordered_map<std::string_view, Opcode> m;
    for (int i = 0; i <= static_cast<int>(Opcode::LOOP); ++i) m[OpcodeName(static_cast<Opcode>(i))] = static_cast<Opcode>(i);
    return m;
  }();
  auto it = by_name.find(name);
  if (it == by_name.end()) return std::nullopt;
  return it->second;
}

InstrForm FormOf(Opcode op) {
  if (static_cast<int>(op) >= pto::isa::kCount) return InstrForm::Special;
  return pto::isa::kInfo[static_cast<int>(op)].form;
}

InstrDtypes DtypesOf(Opcode op) {
  if (static_cast<int>(op) >= pto::isa::kCount) return InstrDtypes::A;
  return pto::isa::kInfo[static_cast<int>(op)].dtypes;
}

const char* MemSpaceName(MemSpace s) {
  switch (s) {
    case MemSpace::Vec: return "Vec";
    case MemSpace::Mat: return "Mat";
    case MemSpace::Left: return "Left";
    case MemSpace::Right: return "Right";
    case MemSpace::Acc: return "Acc";
  }
  return "?";
}

const char* CoreKindName(CoreKind c) { return c == CoreKind::AIC ? "AIC" : "AIV"; }

}  // namespace pypto
