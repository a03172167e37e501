// Symbolic scalars are part of the public C++ API (pypto::SymbolicScalar wraps an Expr).
#pragma once
#include "pypto/symbolic.h"
