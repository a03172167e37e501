// Every PTO instruction callable by name with run-time dtypes: pto::dyn::call(Call).
// The table says, per instruction, its operands and the dtypes it accepts; calling a dtype the
// instruction does not support is a pto::Error, never a compile error.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "pto/dyn/call.hpp"
#include "pto/pto.hpp"

namespace pto::dyn {
// Per-ISA, like the fast layer it calls (see pto/simd.hpp).
inline namespace PTO_ISA_NS {

struct OpInfo {
  std::string operands;  // e.g. "dst, src0, src1"
  std::string dtypes;    // e.g. "F I" (see docs/isa.md)
  std::function<void(const Call&)> run;
};

namespace detail {

// Dtype classes: F floating, I integer, N = F + I, B = I + bool, A = all.
struct F { template <class T> static constexpr bool ok = is_float_v<T>; };
struct I { template <class T> static constexpr bool ok = is_int_v<T>; };
struct N { template <class T> static constexpr bool ok = is_float_v<T> || is_int_v<T>; };
struct B { template <class T> static constexpr bool ok = is_int_v<T> || std::is_same_v<T, bool>; };
struct A { template <class T> static constexpr bool ok = true; };

// Calls f(TypeTag<T>) for d's type if it is in class P, else throws.
template <class P, class Fn>
void on(const Call& c, DType d, Fn&& f) {
  visit_dtype(d, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (P::template ok<T>) f(tag);
    else throw Error(c.name + " does not support dtype " + dtype_name(d));
  });
}

#define PTO_T typename decltype(tag)::type
#define PTO_ON(P, D, BODY) on<P>(c, D, [&](auto tag) { using T = PTO_T; BODY; })

inline std::map<std::string, OpInfo> build() {
  std::map<std::string, OpInfo> r;
  // Families share an operand list, a dtype class and a call shape.
#define BIN(NAME, P)                                                                      \
  r[#NAME] = {"dst, src0, src1", #P, [](const Call& c) {                                  \
                c.arity(3);                                                               \
                PTO_ON(P, c.dt(0), pto::NAME(c.t<T>(0), c.t<T>(1), c.t<T>(2)));           \
              }};
#define UN(NAME, P)                                                                       \
  r[#NAME] = {"dst, src", #P, [](const Call& c) {                                         \
                c.arity(2);                                                               \
                PTO_ON(P, c.dt(0), pto::NAME(c.t<T>(0), c.t<T>(1)));                      \
              }};
#define SCAL(NAME, P)                                                                     \
  r[#NAME] = {"dst, src, scalar", #P, [](const Call& c) {                                 \
                c.arity(3);                                                               \
                PTO_ON(P, c.dt(0), pto::NAME(c.t<T>(0), c.t<T>(1), c.scalar<T>(2)));      \
              }};
#define TER(NAME, P)                                                                      \
  r[#NAME] = {"dst, src0, src1, src2", #P, [](const Call& c) {                            \
                c.arity(4);                                                               \
                PTO_ON(P, c.dt(0), pto::NAME(c.t<T>(0), c.t<T>(1), c.t<T>(2), c.t<T>(3))); \
              }};
  // The families come from the instruction list; Special forms are written out below.
#define PTO_DYN_Binary(NAME, P) BIN(NAME, P)
#define PTO_DYN_RowExpandBinary(NAME, P) BIN(NAME, P)
#define PTO_DYN_ColExpandBinary(NAME, P) BIN(NAME, P)
#define PTO_DYN_Concat(NAME, P) BIN(NAME, P)
#define PTO_DYN_Unary(NAME, P) UN(NAME, P)
#define PTO_DYN_RowReduce(NAME, P) UN(NAME, P)
#define PTO_DYN_ColReduce(NAME, P) UN(NAME, P)
#define PTO_DYN_Expand(NAME, P) UN(NAME, P)
#define PTO_DYN_Move(NAME, P) UN(NAME, P)
#define PTO_DYN_Scalar(NAME, P) SCAL(NAME, P)
#define PTO_DYN_Ternary(NAME, P) TER(NAME, P)
#define PTO_DYN_Special(NAME, P)
#define PTO_DYN_FAMILY(NAME, FORM, DTYPES) PTO_DYN_##FORM(NAME, DTYPES)
  PTO_INSTRUCTIONS(PTO_DYN_FAMILY)
#undef PTO_DYN_FAMILY
#undef PTO_DYN_Binary
#undef PTO_DYN_RowExpandBinary
#undef PTO_DYN_ColExpandBinary
#undef PTO_DYN_Concat
#undef PTO_DYN_Unary
#undef PTO_DYN_RowReduce
#undef PTO_DYN_ColReduce
#undef PTO_DYN_Expand
#undef PTO_DYN_Move
#undef PTO_DYN_Scalar
#undef PTO_DYN_Ternary
#undef PTO_DYN_Special
  SCAL(TAXPY, N) SCAL(TFILLPAD, A)
  UN(TROWCUMSUM, N) UN(TROWCUMPROD, N) UN(TCOLCUMSUM, N) UN(TCOLCUMPROD, N)
#undef BIN
#undef UN
#undef SCAL
#undef TER

  r["TEXPANDS"] = {"dst, scalar", "A", [](const Call& c) {
                     c.arity(2);
                     PTO_ON(A, c.dt(0), pto::TEXPANDS(c.t<T>(0), c.scalar<T>(1)));
                   }};
  for (const char* name : {"TROWARGMAX", "TROWARGMIN", "TCOLARGMAX", "TCOLARGMIN"}) {
    const int which = std::string(name) == "TROWARGMAX"   ? 0
                      : std::string(name) == "TROWARGMIN" ? 1
                      : std::string(name) == "TCOLARGMAX" ? 2
                                                          : 3;
    r[name] = {"idx, src", "src: N, idx: I", [which](const Call& c) {
                 c.arity(2);
                 on<I>(c, c.dt(0), [&](auto itag) {
                   using Ix = typename decltype(itag)::type;
                   PTO_ON(N, c.dt(1), {
                     if (which == 0) pto::TROWARGMAX(c.t<Ix>(0), c.t<T>(1));
                     else if (which == 1) pto::TROWARGMIN(c.t<Ix>(0), c.t<T>(1));
                     else if (which == 2) pto::TCOLARGMAX(c.t<Ix>(0), c.t<T>(1));
                     else pto::TCOLARGMIN(c.t<Ix>(0), c.t<T>(1));
                   });
                 });
               }};
  }
  r["TROWTOPK"] = {"dst, src {cmp}", "N", [](const Call& c) {
                     c.arity(2);
                     const CmpMode m = parse_cmp(c.attr("cmp", "gt"));
                     PTO_ON(N, c.dt(0), pto::TROWTOPK(c.t<T>(0), c.t<T>(1), m));
                   }};
  r["TROWTOPKIDX"] = {"idx, src {cmp}", "src: N, idx: I", [](const Call& c) {
                        c.arity(2);
                        const CmpMode m = parse_cmp(c.attr("cmp", "gt"));
                        on<I>(c, c.dt(0), [&](auto itag) {
                          using Ix = typename decltype(itag)::type;
                          PTO_ON(N, c.dt(1), pto::TROWTOPKIDX(c.t<Ix>(0), c.t<T>(1), m));
                        });
                      }};
  r["TCOLGATHER"] = {"dst, src, index", "A, index: I", [](const Call& c) {
                       c.arity(3);
                       on<I>(c, c.dt(2), [&](auto itag) {
                         using Ix = typename decltype(itag)::type;
                         PTO_ON(A, c.dt(0), pto::TCOLGATHER(c.t<T>(0), c.t<T>(1), c.t<Ix>(2)));
                       });
                     }};
  r["TCMP"] = {"mask, src0, src1 {cmp}", "src: N, mask: B", [](const Call& c) {
                 c.arity(3);
                 const CmpMode m = parse_cmp(c.attr("cmp", "eq"));
                 on<B>(c, c.dt(0), [&](auto mtag) {
                   using M = typename decltype(mtag)::type;
                   PTO_ON(N, c.dt(1), pto::TCMP(c.t<M>(0), c.t<T>(1), c.t<T>(2), m));
                 });
               }};
  r["TCMPS"] = {"mask, src, scalar {cmp}", "src: N, mask: B", [](const Call& c) {
                  c.arity(3);
                  const CmpMode m = parse_cmp(c.attr("cmp", "eq"));
                  on<B>(c, c.dt(0), [&](auto mtag) {
                    using M = typename decltype(mtag)::type;
                    PTO_ON(N, c.dt(1), pto::TCMPS(c.t<M>(0), c.t<T>(1), c.scalar<T>(2), m));
                  });
                }};
  r["TSEL"] = {"dst, mask, src0, src1", "A, mask: B", [](const Call& c) {
                 c.arity(4);
                 on<B>(c, c.dt(1), [&](auto mtag) {
                   using M = typename decltype(mtag)::type;
                   PTO_ON(A, c.dt(0), pto::TSEL(c.t<T>(0), c.t<M>(1), c.t<T>(2), c.t<T>(3)));
                 });
               }};
  r["TSELS"] = {"dst, src0, src1, select", "A", [](const Call& c) {
                  c.arity(4);
                  PTO_ON(A, c.dt(0),
                         pto::TSELS(c.t<T>(0), c.t<T>(1), c.t<T>(2), int(c.integer(3))));
                }};
  for (const char* name : {"TADDSC", "TSUBSC"}) {
    const bool add = std::string(name) == "TADDSC";
    r[name] = {"dst, src0, scalar, src1", "N", [add](const Call& c) {
                 c.arity(4);
                 PTO_ON(N, c.dt(0), {
                   if (add) pto::TADDSC(c.t<T>(0), c.t<T>(1), c.scalar<T>(2), c.t<T>(3));
                   else pto::TSUBSC(c.t<T>(0), c.t<T>(1), c.scalar<T>(2), c.t<T>(3));
                 });
               }};
  }
  r["TCVT"] = {"dst, src {round}", "A -> A", [](const Call& c) {
                 c.arity(2);
                 const RoundMode m = parse_round(c.attr("round", "rint"));
                 on<A>(c, c.dt(0), [&](auto dtag) {
                   using D = typename decltype(dtag)::type;
                   PTO_ON(A, c.dt(1), pto::TCVT(c.t<D>(0), c.t<T>(1), m));
                 });
               }};
  // Matmul: (fp32 | fp16 | bf16) -> fp32, (int8 | uint8) -> int32.
  auto mm = [](const Call& c, auto f) {
    on<A>(c, c.dt(1), [&](auto tag) {
      using In = PTO_T;
      if constexpr (is_float_v<In>) f(c.t<float>(0), c.t<In>(1), c.t<In>(2));
      else if constexpr (std::is_same_v<In, int8_t> || std::is_same_v<In, uint8_t>)
        f(c.t<int32_t>(0), c.t<In>(1), c.t<In>(2));
      else throw Error(c.name + " does not support dtype " + dtype_name(c.dt(1)));
    });
  };
  r["TMATMUL"] = {"acc, left, right", "F -> f32, i8/u8 -> i32", [mm](const Call& c) {
                    c.arity(3);
                    mm(c, [](auto d, auto a, auto b) { pto::TMATMUL(d, a, b); });
                  }};
  r["TMATMUL_ACC"] = {"acc, left, right", "F -> f32, i8/u8 -> i32", [mm](const Call& c) {
                        c.arity(3);
                        mm(c, [](auto d, auto a, auto b) { pto::TMATMUL_ACC(d, a, b); });
                      }};
  r["TGEMV"] = {"acc, left, right", "F -> f32, i8/u8 -> i32", [mm](const Call& c) {
                  c.arity(3);
                  mm(c, [](auto d, auto a, auto b) { pto::TGEMV(d, a, b); });
                }};
  r["TMATMUL_BIAS"] = {"acc, left, right, bias", "F -> f32, i8/u8 -> i32", [mm](const Call& c) {
                         c.arity(4);
                         mm(c, [&](auto d, auto a, auto b) {
                           using Acc = std::remove_pointer_t<decltype(d.data)>;
                           pto::TMATMUL_BIAS(d, a, b, c.t<Acc>(3));
                         });
                       }};
  // Memory.
  r["TLOAD"] = {"dst, gm[...]", "A", [](const Call& c) {
                  c.arity(2);
                  PTO_ON(A, c.dt(0), pto::TLOAD(c.t<T>(0), c.g<T>(1)));
                }};
  r["TSTORE"] = {"gm[...], src {atomic}", "A", [](const Call& c) {
                   c.arity(2);
                   const std::string a = c.attr("atomic", "none");
                   PTO_CHECK(a == "none" || a == "add", "atomic must be none or add");
                   const AtomicMode m = a == "add" ? AtomicMode::ADD : AtomicMode::NONE;
                   PTO_ON(A, c.dt(1), pto::TSTORE(c.g<T>(0), c.t<T>(1), m));
                 }};
  r["TPREFETCH"] = {"gm[...]", "A", [](const Call& c) {
                      c.arity(1);
                      PTO_ON(A, c.gdt(0), pto::TPREFETCH(c.g<T>(0)));
                    }};
  r["MGATHER"] = {"dst, gm, index", "A, index: I", [](const Call& c) {
                    c.arity(3);
                    on<I>(c, c.dt(2), [&](auto itag) {
                      using Ix = typename decltype(itag)::type;
                      PTO_ON(A, c.dt(0), pto::MGATHER(c.t<T>(0), c.g<T>(1), c.t<Ix>(2)));
                    });
                  }};
  r["MSCATTER"] = {"gm, src, index", "A, index: I", [](const Call& c) {
                     c.arity(3);
                     on<I>(c, c.dt(2), [&](auto itag) {
                       using Ix = typename decltype(itag)::type;
                       PTO_ON(A, c.dt(1), pto::MSCATTER(c.g<T>(0), c.t<T>(1), c.t<Ix>(2)));
                     });
                   }};
  // Movement and complex.
  r["TEXTRACT"] = {"dst, src, row, col", "A", [](const Call& c) {
                     c.arity(4);
                     PTO_ON(A, c.dt(0),
                            pto::TEXTRACT(c.t<T>(0), c.t<T>(1), int(c.integer(2)),
                                          int(c.integer(3))));
                   }};
  r["TINSERT"] = {"dst, src, row, col", "A", [](const Call& c) {
                    c.arity(4);
                    PTO_ON(A, c.dt(0),
                           pto::TINSERT(c.t<T>(0), c.t<T>(1), int(c.integer(2)),
                                        int(c.integer(3))));
                  }};
  r["TGATHER"] = {"dst, src, index", "A, index: I", [](const Call& c) {
                    c.arity(3);
                    on<I>(c, c.dt(2), [&](auto itag) {
                      using Ix = typename decltype(itag)::type;
                      PTO_ON(A, c.dt(0), pto::TGATHER(c.t<T>(0), c.t<T>(1), c.t<Ix>(2)));
                    });
                  }};
  r["TSCATTER"] = {"dst, src, index", "A, index: I", [](const Call& c) {
                     c.arity(3);
                     on<I>(c, c.dt(2), [&](auto itag) {
                       using Ix = typename decltype(itag)::type;
                       PTO_ON(A, c.dt(0), pto::TSCATTER(c.t<T>(0), c.t<T>(1), c.t<Ix>(2)));
                     });
                   }};
  r["TCI"] = {"dst, start {descending}", "I", [](const Call& c) {
                c.arity(2);
                const bool desc = c.attr("descending", "0") != "0";
                PTO_ON(I, c.dt(0), pto::TCI(c.t<T>(0), c.scalar<T>(1), desc));
              }};
  r["TTRI"] = {"dst, diagonal {upper}", "A", [](const Call& c) {
                 c.arity(2);
                 const bool upper = c.attr("upper", "0") != "0";
                 PTO_ON(A, c.dt(0), pto::TTRI(c.t<T>(0), int(c.integer(1)), upper));
               }};
  r["TSORT32"] = {"dst, src, dst_index", "N, index: I", [](const Call& c) {
                    c.arity(3);
                    on<I>(c, c.dt(2), [&](auto itag) {
                      using Ix = typename decltype(itag)::type;
                      PTO_ON(N, c.dt(0), pto::TSORT32(c.t<T>(0), c.t<T>(1), c.t<Ix>(2)));
                    });
                  }};
  r["TMRGSORT"] = {"dst, dst_index, src, src_index, run", "N, index: I", [](const Call& c) {
                     c.arity(5);
                     on<I>(c, c.dt(1), [&](auto itag) {
                       using Ix = typename decltype(itag)::type;
                       PTO_ON(N, c.dt(0),
                              pto::TMRGSORT(c.t<T>(0), c.t<Ix>(1), c.t<T>(2), c.t<Ix>(3),
                                            int(c.integer(4))));
                     });
                   }};
  r["TQUANT"] = {"dst, src, scale, offset {round}", "F -> I, scale: f32", [](const Call& c) {
                   c.arity(4);
                   const RoundMode m = parse_round(c.attr("round", "rint"));
                   on<I>(c, c.dt(0), [&](auto dtag) {
                     using D = typename decltype(dtag)::type;
                     PTO_ON(F, c.dt(1),
                            pto::TQUANT(c.t<D>(0), c.t<T>(1), c.t<float>(2),
                                        c.scalar<float>(3), m));
                   });
                 }};
  r["TDEQUANT"] = {"dst, src, scale, offset", "I -> F, scale: f32", [](const Call& c) {
                     c.arity(4);
                     on<F>(c, c.dt(0), [&](auto dtag) {
                       using D = typename decltype(dtag)::type;
                       PTO_ON(I, c.dt(1),
                              pto::TDEQUANT(c.t<D>(0), c.t<T>(1), c.t<float>(2),
                                            c.scalar<float>(3)));
                     });
                   }};
  // Cube <-> vector channels.
  r["TPUSH"] = {"fifo, src", "A", [](const Call& c) {
                  c.arity(2);
                  PTO_ON(A, c.dt(1), pto::TPUSH(c.fifo(0).as<T>(), c.t<T>(1)));
                }};
  r["TPOP"] = {"dst, fifo", "A", [](const Call& c) {
                 c.arity(2);
                 PTO_ON(A, c.dt(0), PTO_CHECK(pto::TPOP(c.t<T>(0), c.fifo(1).as<T>()),
                                              "TPOP on a closed, empty fifo"));
               }};
  return r;
}
#undef PTO_ON
#undef PTO_T

}  // namespace detail

// The instruction table, by upper-case PTO name.
inline const std::map<std::string, OpInfo>& registry() {
  static const std::map<std::string, OpInfo> table = detail::build();
  return table;
}

// Runs one instruction; throws pto::Error for unknown names, bad operands or dtypes.
inline void call(const Call& c) {
  auto it = registry().find(c.name);
  PTO_CHECK(it != registry().end(), "unknown instruction " + c.name);
  it->second.run(c);
}

}  // namespace PTO_ISA_NS
}  // namespace pto::dyn
