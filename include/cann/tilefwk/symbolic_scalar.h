// CANN PyPTO's tilefwk/symbolic_scalar.h: every name is in tilefwk/tilefwk.h.
#pragma once

#include "tilefwk/tilefwk.h"
