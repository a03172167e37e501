// pypto._isa entry points built for AVX2 + FMA + F16C, whatever the flags of the rest of the
// module. Standard headers come first so that only PTO code gets the AVX2 target.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "isa_entry.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#define PTO_SIMD_AVX2 1
#include <pto/asm/exec.hpp>

namespace {
void call_avx2(const pto::dyn::Call& c) { pto::dyn::call(c); }
void run_avx2(const pto::as::Module& m, pto::as::Bindings& b) { pto::as::run(m, b); }
}  // namespace
#pragma GCC pop_options

pypto_isa::Entry pypto_isa::avx2_entry() { return {call_avx2, run_avx2, "avx2"}; }
#else
pypto_isa::Entry pypto_isa::avx2_entry() { return {nullptr, nullptr, nullptr}; }
#endif
