// The instruction entry points of pypto._isa, compiled once per instruction set: isa_module.cpp
// (portable) and isa_avx2.cpp (AVX2 + FMA + F16C); the module picks one at import by CPU.
#pragma once

namespace pto::dyn {
struct Call;
}
namespace pto::as {
struct Module;
struct Bindings;
}

namespace pypto_isa {

struct Entry {
  void (*call)(const pto::dyn::Call&);
  void (*run)(const pto::as::Module&, pto::as::Bindings&);
  const char* isa;
};

Entry generic_entry();
Entry avx2_entry();  // isa == nullptr where the AVX2 build is not available

}  // namespace pypto_isa
