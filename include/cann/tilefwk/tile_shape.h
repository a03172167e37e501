// CANN PyPTO's tilefwk/tile_shape.h: every name is in tilefwk/tilefwk.h.
#pragma once

#include "tilefwk/tilefwk.h"
