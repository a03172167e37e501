// PTO-ISA umbrella header: types, element semantics and every instruction.
#pragma once

#include "pto/half.hpp"
#include "pto/round.hpp"
#include "pto/types.hpp"
#include "pto/elem.hpp"
#include "pto/ref/common.hpp"
#include "pto/ref/compare.hpp"
#include "pto/ref/complex.hpp"
#include "pto/ref/convert.hpp"
#include "pto/ref/elementwise.hpp"
#include "pto/ref/matrix.hpp"
#include "pto/ref/memory.hpp"
#include "pto/ref/movement.hpp"
#include "pto/ref/reduce.hpp"
