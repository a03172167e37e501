// The one list of PTO tile instruction names. X(NAME, FAST): FAST is 1 when pto::NAME has its
// own implementation in namespace pto, 0 when pto::NAME is the reference one. Used to generate
// the Tile overloads, and by bindings / the assembler to enumerate the ISA.
#pragma once

#define PTO_INSTRUCTIONS(X)                                                                   \
  X(TLOAD, 1) X(TSTORE, 1) X(TPREFETCH, 1) X(MGATHER, 1) X(MSCATTER, 1)                       \
  X(TADD, 1) X(TSUB, 1) X(TMUL, 1) X(TDIV, 1) X(TMAX, 1) X(TMIN, 1) X(TREM, 1)               \
  X(TAND, 1) X(TOR, 1) X(TXOR, 1) X(TSHL, 1) X(TSHR, 1) X(TPRELU, 1)                          \
  X(TABS, 1) X(TNEG, 1) X(TRELU, 1) X(TNOT, 1) X(TEXP, 1) X(TLOG, 1) X(TSQRT, 1)             \
  X(TRSQRT, 1) X(TRECIP, 1)                                                                   \
  X(TADDS, 1) X(TSUBS, 1) X(TMULS, 1) X(TDIVS, 1) X(TMAXS, 1) X(TMINS, 1) X(TREMS, 1)        \
  X(TANDS, 1) X(TORS, 1) X(TXORS, 1) X(TSHLS, 1) X(TSHRS, 1) X(TLRELU, 1) X(TEXPANDS, 1)     \
  X(TADDC, 1) X(TSUBC, 1) X(TFUSEDMULADD, 1) X(TAXPY, 1) X(TADDSC, 1) X(TSUBSC, 1)            \
  X(TCMP, 1) X(TCMPS, 1) X(TSEL, 1) X(TSELS, 1)                                               \
  X(TCVT, 1)                                                                                  \
  X(TROWSUM, 1) X(TROWPROD, 1) X(TROWMAX, 1) X(TROWMIN, 1)                                    \
  X(TCOLSUM, 1) X(TCOLPROD, 1) X(TCOLMAX, 1) X(TCOLMIN, 1)                                    \
  X(TROWARGMAX, 1) X(TROWARGMIN, 1) X(TROWEXPAND, 1) X(TCOLEXPAND, 1)                         \
  X(TROWEXPANDADD, 1) X(TROWEXPANDSUB, 1) X(TROWEXPANDMUL, 1) X(TROWEXPANDDIV, 1)             \
  X(TROWEXPANDMAX, 1) X(TROWEXPANDMIN, 1) X(TROWEXPANDEXPDIF, 1)                              \
  X(TCOLEXPANDADD, 1) X(TCOLEXPANDSUB, 1) X(TCOLEXPANDMUL, 1) X(TCOLEXPANDDIV, 1)             \
  X(TCOLEXPANDMAX, 1) X(TCOLEXPANDMIN, 1) X(TCOLEXPANDEXPDIF, 1)                              \
  X(TMATMUL, 1) X(TMATMUL_ACC, 1) X(TMATMUL_BIAS, 1) X(TGEMV, 1)                              \
  X(TMOV, 1) X(TEXTRACT, 1) X(TINSERT, 1) X(TTRANS, 1) X(TRESHAPE, 1) X(TFILLPAD, 1)          \
  X(TCONCAT, 1)                                                                               \
  X(TGATHER, 1) X(TSCATTER, 1) X(TCI, 1) X(TTRI, 1) X(TSORT32, 1) X(TMRGSORT, 1)              \
  X(TQUANT, 1) X(TDEQUANT, 1) X(TPUSH, 1) X(TPOP, 1)
