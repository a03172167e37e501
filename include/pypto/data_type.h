// Element types of tensors: part of the public C++ API (pypto::DT_FP32, ...) and of the IR.
#pragma once

#include <cstdint>

namespace pypto {

// The same order as pto::DType up to UINT64 (the unsigned types after BOOL keep the older
// values). The MX formats after it (8-bit, and 4-bit packed in pairs) and HiFloat8 are storage only: their bytes move
// (views, copies, gathers), arithmetic needs a cast to a float type first; on the ISA they are uint8 bytes.
enum class DataType : uint8_t {
  FP32, FP16, BF16, INT8, INT16, INT32, INT64, UINT8, BOOL, UINT16, UINT32, UINT64, FP8E4M3, FP8E5M2, FP8E8M0,
  // FP4E2M1X2: two E2M1 values in a byte, the even index in the low nibble (torch.float4_e2m1fn_x2);
  // HF8: HiFloat8, a sign, a prefix-coded dot field, exponent and mantissa (tapered precision);
  // FP4E1M2X2: two E1M2 values in a byte (0, 0.25, ..., 1.75 and their negatives), low nibble first.
  FP4E2M1X2, HF8, FP4E1M2X2,
  // CANN PyPTO's names of the same values, so that `DataType::DT_FP32` reads as it does there.
  DT_FP32 = FP32, DT_FP16 = FP16, DT_BF16 = BF16, DT_INT8 = INT8, DT_INT16 = INT16, DT_INT32 = INT32,
  DT_INT64 = INT64, DT_UINT8 = UINT8, DT_BOOL = BOOL, DT_UINT16 = UINT16, DT_UINT32 = UINT32, DT_UINT64 = UINT64,
  DT_FP8E4M3 = FP8E4M3, DT_FP8E5M2 = FP8E5M2, DT_FP8E8M0 = FP8E8M0, DT_FP4_E2M1X2 = FP4E2M1X2, DT_HF8 = HF8,
  DT_FP4_E1M2X2 = FP4E1M2X2
};

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
inline constexpr DataType DT_FP8E4M3 = DataType::FP8E4M3;
inline constexpr DataType DT_FP8E5M2 = DataType::FP8E5M2;
inline constexpr DataType DT_FP8E8M0 = DataType::FP8E8M0;
inline constexpr DataType DT_FP4_E2M1X2 = DataType::FP4E2M1X2;
inline constexpr DataType DT_HF8 = DataType::HF8;
inline constexpr DataType DT_FP4_E1M2X2 = DataType::FP4E1M2X2;

}  // namespace pypto
