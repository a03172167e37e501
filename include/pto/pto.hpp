// PTO-ISA umbrella header.
//
//   pto::ref::NAME(TileRef...)   scalar reference implementations: the semantics
//   pto::NAME(TileRef...)        fast implementations (or the reference where none is faster)
//   pto::NAME(Tile...)           the same on static tiles (any mix of Tile and TileRef)
#pragma once

#include "pto/half.hpp"
#include "pto/round.hpp"
#include "pto/types.hpp"
#include "pto/elem.hpp"
#include "pto/elem_math.hpp"
#include "pto/isa_list.hpp"
#include "pto/sync.hpp"
#include "pto/tile.hpp"

#include "pto/ref/common.hpp"
#include "pto/ref/compare.hpp"
#include "pto/ref/complex.hpp"
#include "pto/ref/convert.hpp"
#include "pto/ref/elementwise.hpp"
#include "pto/ref/math.hpp"
#include "pto/ref/matrix.hpp"
#include "pto/ref/memory.hpp"
#include "pto/ref/movement.hpp"
#include "pto/ref/reduce.hpp"
#include "pto/ref/scan.hpp"

#include "pto/simd.hpp"
#include "pto/fast/complex.hpp"
#include "pto/fast/convert.hpp"
#include "pto/fast/elementwise.hpp"
#include "pto/fast/math.hpp"
#include "pto/fast/matmul.hpp"
#include "pto/fast/memory.hpp"
#include "pto/fast/movement.hpp"
#include "pto/fast/reduce.hpp"
#include "pto/fast/scan.hpp"

#include "pto/tile_ops.hpp"
