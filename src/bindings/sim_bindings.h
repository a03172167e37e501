// The machine model's results as Python data (pypto.sim reads them).
#pragma once

#include <nanobind/nanobind.h>

#include <string>
#include <vector>

#include "ir/block_graph.h"

namespace pypto {

/// Replays the launches a traced run recorded (stats["launches"], stats["deps"]) on `machine`.
nanobind::dict SimulateToDict(const ExecGraph& g, const nanobind::list& launches,
                              const std::vector<std::vector<int>>& deps, const std::string& machine);
/// Every number of a machine description, by name.
nanobind::dict MachineInfo(const std::string& name);
/// pypto._core.link_specs / collective_time (src/machine/links.h).
void BindLinks(nanobind::module_& m);

}  // namespace pypto
