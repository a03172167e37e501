// CANN PyPTO's tilefwk/element.h: every name is in tilefwk/tilefwk.h.
#pragma once

#include "tilefwk/tilefwk.h"
