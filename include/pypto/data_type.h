// Element types of tensors: part of the public C++ API (pypto::DT_FP32, ...) and of the IR.
#pragma once

#include <cstdint>

namespace pypto {

// The same order as pto::DType (the unsigned types after BOOL keep the older values).
enum class DataType : uint8_t { FP32, FP16, BF16, INT8, INT16, INT32, INT64, UINT8, BOOL, UINT16, UINT32, UINT64 };

// PyPTO's names.
inline constexpr DataType DT_FP32 = DataType::FP32;
inline constexpr DataType DT_FP16 = DataType::FP16;
inline constexpr DataType DT_BF16 = DataType::BF16;
inline constexpr DataType DT_INT8 = DataType::INT8;
inline constexpr DataType DT_INT16 = DataType::INT16;
inline constexpr DataType DT_INT32 = DataType::INT32;
inline constexpr DataType DT_INT64 = DataType::INT64;
inline constexpr DataType DT_UINT8 = DataType::UINT8;
inline constexpr DataType DT_BOOL = DataType::BOOL;
inline constexpr DataType DT_UINT16 = DataType::UINT16;
inline constexpr DataType DT_UINT32 = DataType::UINT32;
inline constexpr DataType DT_UINT64 = DataType::UINT64;

}  // namespace pypto
