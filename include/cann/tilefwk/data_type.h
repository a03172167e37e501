// CANN PyPTO's tilefwk/data_type.h: every name is in tilefwk/tilefwk.h.
#pragma once

#include "tilefwk/tilefwk.h"
