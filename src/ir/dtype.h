#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pypto/data_type.h"

namespace pypto {

constexpr int kNumDataTypes = 18;

int DataTypeBytes(DataType t);
/// "fp32", "fp16", ... as used by the IR printers.
const char* DataTypeName(DataType t);
/// Parses the printer's name back; throws UserError on an unknown name.
DataType DataTypeFromName(const std::string& name);
bool IsFloat(DataType t);
bool IsInteger(DataType t);
/// The 16-bit floating types, which compute in fp32 inside and round once.
inline bool Is16BitFloat(DataType t) { return t == DataType::FP16 || t == DataType::BF16; }
bool IsUnsigned(DataType t);
/// The MX formats (8-bit, and 4-bit in pairs) and HiFloat8: bytes that move, no arithmetic (uint8
/// on the ISA).
inline bool IsStorageOnly(DataType t) {
  return t == DataType::FP8E4M3 || t == DataType::FP8E5M2 || t == DataType::FP8E8M0 || t == DataType::FP4E2M1X2 ||
         t == DataType::HF8 || t == DataType::FP4E1M2X2;
}
/// Smallest and largest value of an integer (or bool) dtype; uint64's largest is given as
/// INT64_MAX (scalar operands travel as int64).
int64_t IntegerMin(DataType t);
int64_t IntegerMax(DataType t);
/// Bytes of a dense tensor of `shape`, or nullopt when a dim is negative or the count overflows
/// or exceeds kMaxTensorBytes (no machine has that memory). The one place sizes are multiplied.
constexpr int64_t kMaxTensorBytes = int64_t(1) << 48;
std::optional<int64_t> TensorBytes(const std::vector<int64_t>& shape, DataType t);

}  // namespace pypto
