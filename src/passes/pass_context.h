// What every pass gets: the options, the machine it compiles for, and the dump sink.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "machine/machine.h"

namespace pypto {

struct CompileOptions {
  std::string machine = "cpu";  // capacities the program must fit ("a2a3", "a5": NPU models)
  std::string dump_dir;          // write per-pass dumps here when set
  bool dump_passes = false;
  std::vector<std::string> dump_only;  // pass names to dump (all if empty)
  bool reciprocal_division = false;    // FuseInstructions: x / row_value as x * (1 / row_value)
  bool keep_snapshots = false;         // keep the block graph after each block-level pass (verify_passes)
};

class PassContext {
 public:
  explicit PassContext(const CompileOptions& opts);

  const CompileOptions& options() const { return opts_; }
  const MachineModel& machine() const { return *machine_; }

  /// Records the IR text after pass `name`; written to dump_dir/passes/NN_name.txt if dumping,
  /// with the JSON form from `json` (called only then) in NN_name.json.
  void Dump(const std::string& name, const std::string& text, double ms,
            const std::function<std::string()>& json = {});
  const std::vector<std::pair<std::string, std::string>>& dumps() const { return dumps_; }
  const std::vector<std::pair<std::string, double>>& timings() const { return timings_; }

 private:
  CompileOptions opts_;
  const MachineModel* machine_;
  std::vector<std::pair<std::string, std::string>> dumps_;
  std::vector<std::pair<std::string, double>> timings_;
};

}  // namespace pypto
