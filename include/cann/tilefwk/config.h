// CANN PyPTO's tilefwk/config.h: every name is in tilefwk/tilefwk.h.
#pragma once

#include "tilefwk/tilefwk.h"
