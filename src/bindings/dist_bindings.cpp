#include "bindings/dist_bindings.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "pypto/dist_signal.hpp"
#include "pypto/error.h"
#include "pto/half.hpp"
#include "runtime/signal_hook.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace pypto {
namespace {

// One element of another host's change: where this host's element still holds what the sender
// last had (`twin`), the sender's value is written as it is (exact: an ordinary store); where it
// changed here too (both hosts added into it), the sender's difference is added. One atomic
// compare-and-swap decides, so a rank of this host adding into the element meanwhile loses nothing.
template <class U, class Add>
void MergeOne(U* p, U fresh, U twin, Add add) {
  U old = __atomic_load_n(p, __ATOMIC_RELAXED);
  for (;;) {
    U next = old == twin ? fresh : add(old, fresh, twin);
    if (__atomic_compare_exchange_n(p, &old, next, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) return;
  }
}

// A span of another host's bytes: each element the sender changed (fresh differs from before)
// merges into this host's heap atomically and into its twin (only the engine writes the twin,
// under the host's lock: plain stores).
template <class U, class Add>
void MergeSpan(char* heap, char* twin, const U* fresh, const U* before, size_t n, Add add) {
  U* h = reinterpret_cast<U*>(heap);
  U* t = reinterpret_cast<U*>(twin);
  for (size_t i = 0; i < n; ++i) {
    if (fresh[i] == before[i]) continue;
    MergeOne(h + i, fresh[i], before[i], add);
    t[i] = t[i] == before[i] ? fresh[i] : add(t[i], fresh[i], before[i]);
  }
}

template <class F, class U>
U FloatAdd(U old, U fresh, U twin) {
  F o, f, t;
  std::memcpy(&o, &old, sizeof(F));
  std::memcpy(&f, &fresh, sizeof(F));
  std::memcpy(&t, &twin, sizeof(F));
  F r = o + (f - t);
  U out;
  std::memcpy(&out, &r, sizeof(F));
  return out;
}

float HalfToFloat(uint16_t h) { return static_cast<float>(pto::half::from_bits(h)); }

using Bits = nb::ndarray<nb::numpy, nb::c_contig, nb::device::cpu>;

std::atomic<bool> stop_calls{false};

}  // namespace

bool StopCallsRequested() { return stop_calls.load(std::memory_order_relaxed); }

void BindDist(nb::module_& m) {
  m.def(
      "_stop_calls", [](bool on) { stop_calls.store(on); }, "on"_a,
      "While on, every call running in this process stops at its next check, as Ctrl-C stops it (a "
      "one-process distributed run whose rank failed: its other ranks' waits end now).");
  m.def(
      "_set_signal_hook",
      [](nb::object hook) {
        if (hook.is_none()) {
          rt::SetSignalHook({});
          return;
        }
        // Held as a Python object for as long as it is set; called from a worker thread, so it
        // takes the GIL (the caller's thread released it for the call). It answers True (it
        // carried the signal), False (run the kernel) or a str: the UserError to fail the call with.
        auto held = std::shared_ptr<nb::object>(new nb::object(hook), [](nb::object* o) {
          nb::gil_scoped_acquire gil;
          delete o;
        });
        rt::SetSignalHook([held](const rt::SignalEvent& e) {
          nb::gil_scoped_acquire gil;
          nb::object r;
          try {
            r = (*held)(static_cast<int>(e.kind), reinterpret_cast<uintptr_t>(e.cell), e.value, e.op, e.cmp);
          } catch (nb::python_error& err) {
            throw std::runtime_error(std::string("the distributed engine failed: ") + err.what());
          }
          if (nb::isinstance<nb::str>(r)) throw UserError(nb::cast<std::string>(r));
          return nb::cast<bool>(r);
        });
      },
      "hook"_a.none(),
      "Sets (None: removes) the process's signal hook: hook(kind, cell_address, value, op, cmp) -> bool | str, "
      "called before each signal kernel (python/pypto/dist/engine.py).");
  m.def(
      "_signal_cell",
      [](uintptr_t cell, int64_t value, int op) {
        pypto_kernel::Notify(reinterpret_cast<int32_t*>(cell), value, op);
      },
      "cell"_a, "value"_a, "op"_a,
      "A notify on the int32 cell at this address (op 0 set, 1 add), waking its waiters (a signal that came "
      "from another host).");
  m.def(
      "_changed_rows",
      [](uintptr_t heap, uintptr_t twin, int64_t nbytes) {
        // Runs [first, end) of the 64-byte rows where the heap differs from its twin.
        std::vector<int64_t> runs;
        {
          nb::gil_scoped_release release;
          const char* h = reinterpret_cast<const char*>(heap);
          const char* t = reinterpret_cast<const char*>(twin);
          const int64_t rows = (nbytes + 63) / 64;
          int64_t open = -1;
          for (int64_t r = 0; r < rows; ++r) {
            const int64_t len = r == rows - 1 ? nbytes - r * 64 : 64;
            const bool diff = std::memcmp(h + r * 64, t + r * 64, static_cast<size_t>(len)) != 0;
            if (diff && open < 0) open = r;
            if (!diff && open >= 0) {
              runs.push_back(open);
              runs.push_back(r);
              open = -1;
            }
          }
          if (open >= 0) {
            runs.push_back(open);
            runs.push_back(rows);
          }
        }
        return runs;
      },
      "heap"_a, "twin"_a, "nbytes"_a,
      "The runs of 64-byte rows where `nbytes` at `heap` differ from `twin`: [first0, end0, first1, ...].");
  m.def(
      "_merge_span",
      [](uintptr_t heap, uintptr_t twin, Bits fresh, Bits before, const std::string& dtype) {
        if (fresh.nbytes() != before.nbytes())
          throw std::invalid_argument("_merge_span: fresh and before differ in size");
        char* h = reinterpret_cast<char*>(heap);
        char* t = reinterpret_cast<char*>(twin);
        const size_t bytes = fresh.nbytes();
        const void* fr = fresh.data();
        const void* be = before.data();
        nb::gil_scoped_release release;
        auto f = [&](auto tag, auto add) {
          using U = decltype(tag);
          MergeSpan<U>(h, t, static_cast<const U*>(fr), static_cast<const U*>(be), bytes / sizeof(U), add);
        };
        if (dtype == "float32") {
          f(uint32_t{}, FloatAdd<float, uint32_t>);
        } else if (dtype == "float64") {
          f(uint64_t{}, FloatAdd<double, uint64_t>);
        } else if (dtype == "float16" || dtype == "bfloat16") {
          const bool bf = dtype == "bfloat16";
          f(uint16_t{}, [bf](uint16_t o, uint16_t fr, uint16_t t) -> uint16_t {
            auto val = [bf](uint16_t x) {
              return bf ? static_cast<float>(pto::bfloat16::from_bits(x)) : HalfToFloat(x);
            };
            float r = val(o) + (val(fr) - val(t));
            return bf ? pto::bfloat16(r).bits : pto::half(r).bits;
          });
        } else if (dtype.size() > 1 && (dtype[0] == 'i' || dtype[0] == 'u' || dtype == "bool")) {
          const size_t k = dtype == "bool" ? 1 : std::stoul(dtype.substr(dtype.find_first_of("0123456789"))) / 8;
          if (k == 1)
            f(uint8_t{}, [](uint8_t o, uint8_t fr, uint8_t t) { return uint8_t(o + uint8_t(fr - t)); });
          else if (k == 2)
            f(uint16_t{}, [](uint16_t o, uint16_t fr, uint16_t t) { return uint16_t(o + uint16_t(fr - t)); });
          else if (k == 4)
            f(uint32_t{}, [](uint32_t o, uint32_t fr, uint32_t t) { return uint32_t(o + (fr - t)); });
          else
            f(uint64_t{}, [](uint64_t o, uint64_t fr, uint64_t t) { return uint64_t(o + (fr - t)); });
        } else {
          throw std::invalid_argument("_merge_span: no merge for dtype " + dtype);
        }
      },
      "heap"_a, "twin"_a, "fresh"_a, "before"_a, "dtype"_a,
      "Merges another host's span of a window (its bytes now, `fresh`, and as its twin had them, `before`) "
      "into the heap at `heap` and the twin at `twin`: an element the sender changed becomes its value where "
      "it still holds `before`, else gains fresh - before (both hosts added into it); atomic per element in "
      "the heap. Integers wrap; 16-bit floats add in fp32 and round once.");
}

}  // namespace pypto
