// JSON form of every IR level, for tools (graph.html, scripts) beside the text printers.
// The schema mirrors the structs field by field; expressions are their canonical text.
// No JSON library: a tiny writer with a string escaper (ir/json_printer.cpp).
#pragma once

#include <string>

#include "ir/block_graph.h"

namespace pypto {

/// Escapes `s` as a JSON string literal, quotes included.
std::string JsonString(const std::string& s);

/// {"level": "tensor_graph", "function": ..., "values": [...], "body": [...]}
std::string TensorGraphJson(const Function& f);
/// {"level": "tile_graph", ..., "body": [tile ops and loops]}
std::string TileGraphJson(const TileGraph& g);
/// {"level": "block_graph", ..., "kernels": [...], "body": [launches and loops]}
std::string BlockGraphJson(const BlockGraph& g);
/// {"level": "exec_graph", ..., "kernels": [...], "body": [launch nodes with deps and loops]}
std::string ExecGraphJson(const ExecGraph& g);

}  // namespace pypto
