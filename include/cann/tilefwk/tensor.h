// CANN PyPTO's tilefwk/tensor.h: every name is in tilefwk/tilefwk.h.
#pragma once

#include "tilefwk/tilefwk.h"
