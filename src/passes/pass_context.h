// What every pass gets: the options, the machine it compiles for, and the dump sink.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "ir/program.h"
#include "machine/machine.h"

namespace pypto {

class PassContext {
 public:
  explicit PassContext(const CompileOptions& opts);

  const CompileOptions& options() const { return opts_; }
  const MachineModel& machine() const { return *machine_; }

  /// Records the IR text after pass `name`; written to dump_dir/passes/NN_name.txt if dumping,
  /// with the JSON form from `json` (called only then) in NN_name.json.
  void Dump(const std::string& name, const std::string& text, double ms, const std::function<std::string()>& json = {});
  const std::vector<std::pair<std::string, std::string>>& dumps() const { return dumps_; }
  const std::vector<std::pair<std::string, double>>& timings() const { return timings_; }

 private:
  CompileOptions opts_;
  const MachineModel* machine_;
  std::vector<std::pair<std::string, std::string>> dumps_;
  std::vector<std::pair<std::string, double>> timings_;
};

}  // namespace pypto
