// The error types are part of the public C++ API (a C++ user catches pypto::UserError).
#pragma once
#include "pypto/error.h"
