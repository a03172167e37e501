// CANN PyPTO's tilefwk/error.h: every name is in tilefwk/tilefwk.h.
#pragma once

#include "tilefwk/tilefwk.h"
