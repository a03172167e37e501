#include "ir/dtype.h"

#include "ir/error.h"

namespace pypto {

namespace {
struct DataTypeInfo {
  const char* name;
  int bytes;
  bool is_float;
};
constexpr DataTypeInfo kInfo[kNumDataTypes] = {
    {"fp32", 4, true}, {"fp16", 2, true},  {"bf16", 2, true},  {"int8", 1, false}, {"int16", 2, false},
    {"int32", 4, false}, {"int64", 8, false}, {"uint8", 1, false}, {"bool", 1, false},
    {"uint16", 2, false}, {"uint32", 4, false}, {"uint64", 8, false},
    {"fp8e4m3", 1, false}, {"fp8e5m2", 1, false}, {"fp8e8m0", 1, false}, {"fp4e2m1x2", 1, false},
    {"hf8", 1, false}, {"fp4e1m2x2", 1, false},
};
}  // namespace

int DataTypeBytes(DataType t) { return kInfo[static_cast<int>(t)].bytes; }
const char* DataTypeName(DataType t) { return kInfo[static_cast<int>(t)].name; }
bool IsFloat(DataType t) { return kInfo[static_cast<int>(t)].is_float; }
bool IsInteger(DataType t) { return !IsFloat(t) && t != DataType::BOOL && !IsStorageOnly(t); }
bool IsUnsigned(DataType t) {
  return t == DataType::UINT8 || t == DataType::UINT16 || t == DataType::UINT32 || t == DataType::UINT64;
}

DataType DataTypeFromName(const std::string& name) {
  for (int i = 0; i < kNumDataTypes; ++i)
    if (name == kInfo[i].name) return static_cast<DataType>(i);
  throw UserError("unknown dtype '" + name + "'");
}

int64_t IntegerMin(DataType t) {
  switch (t) {
    case DataType::INT8: return INT8_MIN;
    case DataType::INT16: return INT16_MIN;
    case DataType::INT32: return INT32_MIN;
    case DataType::INT64: return INT64_MIN;
    default: return 0;  // unsigned, bool
  }
}

int64_t IntegerMax(DataType t) {
  switch (t) {
    case DataType::INT8: return INT8_MAX;
    case DataType::INT16: return INT16_MAX;
    case DataType::INT32: return INT32_MAX;
    case DataType::INT64: return INT64_MAX;
    case DataType::UINT8: return UINT8_MAX;
    case DataType::UINT16: return UINT16_MAX;
    case DataType::UINT32: return UINT32_MAX;
    case DataType::UINT64: return INT64_MAX;
    case DataType::BOOL: return 1;
    default: return 0;
  }
}

std::optional<int64_t> TensorBytes(const std::vector<int64_t>& shape, DataType t) {
  int64_t n = DataTypeBytes(t);
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return std::nullopt;
  }
  if (n > kMaxTensorBytes) return std::nullopt;
  return n;
}

}  // namespace pypto
