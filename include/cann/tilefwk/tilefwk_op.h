// CANN PyPTO's tilefwk/tilefwk_op.h: every name is in tilefwk/tilefwk.h.
#pragma once

#include "tilefwk/tilefwk.h"
