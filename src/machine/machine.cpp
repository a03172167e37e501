#include "machine/machine.h"

#include "ir/error.h"

namespace pypto {

namespace {
const std::vector<MachineModel>& Machines() {
  static const std::vector<MachineModel> m = {
      {"a2a3", 192 * 1024, 512 * 1024, 64 * 1024, 64 * 1024, 128 * 1024, 48, 24, 32, true},
      {"a5", 256 * 1024, 512 * 1024, 64 * 1024, 64 * 1024, 256 * 1024, 64, 32, 32, true},
      // The host: a core's share of L2 stands for UB; tiles need no block alignment.
      {"cpu", 512 * 1024, 1024 * 1024, 256 * 1024, 256 * 1024, 256 * 1024, 0, 0, 64, false},
  };
  return m;
}
}  // namespace

const MachineModel& GetMachine(const std::string& name) {
  for (auto& m : Machines())
    if (m.name == name) return m;
  std::string names;
  for (auto& n : MachineNames()) names += (names.empty() ? "" : ", ") + n;
  throw UserError("unknown machine '" + name + "'", {}, "use one of: " + names);
}

std::vector<std::string> MachineNames() {
  std::vector<std::string> n;
  for (auto& m : Machines()) n.push_back(m.name);
  return n;
}

}  // namespace pypto
