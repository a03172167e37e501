#pragma once

#include <cstdint>
#include <string>

namespace pypto {

enum class DataType : uint8_t { FP32, FP16, BF16, INT8, INT16, INT32, INT64, UINT8, BOOL };

constexpr int kNumDataTypes = 9;

int DataTypeBytes(DataType t);
/// "fp32", "fp16", ... as used by the IR printers.
const char* DataTypeName(DataType t);
/// Parses the printer's name back; throws UserError on an unknown name.
DataType DataTypeFromName(const std::string& name);
bool IsFloat(DataType t);
bool IsInteger(DataType t);

}  // namespace pypto
