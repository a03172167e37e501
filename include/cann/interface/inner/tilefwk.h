// CANN PyPTO's internal interface/inner/tilefwk.h, which its operator sources include beside
// tilefwk/tilefwk.h: the names they use from it (RowMaxExpand, RowSumExpand, ...) are in
// pypto/pypto.h.
#pragma once

#include "tilefwk/tilefwk.h"
