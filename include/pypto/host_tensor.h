// A caller's array handed to the runtime: part of the public C++ API (pypto::Run takes them).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "pypto/data_type.h"

namespace pypto {

/// Data pointer, dtype, shape and strides in elements (empty strides: dense row-major). The
/// caller owns the memory; a call reads and writes it in place.
struct HostTensor {
  void* data = nullptr;
  DataType dtype = DataType::FP32;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;

  HostTensor() = default;
  HostTensor(void* data_, DataType dtype_, std::vector<int64_t> shape_, std::vector<int64_t> strides_ = {})
      : data(data_), dtype(dtype_), shape(std::move(shape_)), strides(std::move(strides_)) {}
};

}  // namespace pypto
