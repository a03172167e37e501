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
};
}  // namespace

int DataTypeBytes(DataType t) { return kInfo[static_cast<int>(t)].bytes; }
const char* DataTypeName(DataType t) { return kInfo[static_cast<int>(t)].name; }
bool IsFloat(DataType t) { return kInfo[static_cast<int>(t)].is_float; }
bool IsInteger(DataType t) { return !IsFloat(t) && t != DataType::BOOL; }

DataType DataTypeFromName(const std::string& name) {
  for (int i = 0; i < kNumDataTypes; ++i)
    if (name == kInfo[i].name) return static_cast<DataType>(i);
  throw UserError("unknown dtype '" + name + "'");
}

}  // namespace pypto
