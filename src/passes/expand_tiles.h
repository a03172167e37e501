#pragma once

#include "ir/tile_graph.h"
#include "passes/pass_context.h"

namespace pypto {

/// Tensor graph -> tile graph: each tensor op becomes a tile op over an iteration space with
/// the user's vec tile shape (or an automatic one, whose reason is recorded). Tails are the
/// tiles at the end of each dim; their valid shape is computed, never padded in the data.
/// Requires: shapes inferred. Produces: every op has a tile shape of its iteration rank.
TileGraph ExpandTiles(const Function& fn, PassContext& ctx);

}  // namespace pypto
