#include "passes/pass_context.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "ir/error.h"

namespace pypto {

PassContext::PassContext(const CompileOptions& opts) : opts_(opts), machine_(&GetMachine(opts.machine)) {}

void PassContext::Dump(const std::string& name, const std::string& text, double ms) {
  char prefix[8];
  std::snprintf(prefix, sizeof(prefix), "%02d_", static_cast<int>(dumps_.size()));
  std::string file = prefix + name;
  dumps_.emplace_back(file, text);
  timings_.emplace_back(name, ms);
  if (opts_.dump_dir.empty() || !opts_.dump_passes) return;
  if (!opts_.dump_only.empty() &&
      std::find(opts_.dump_only.begin(), opts_.dump_only.end(), name) == opts_.dump_only.end())
    return;
  std::filesystem::path dir = std::filesystem::path(opts_.dump_dir) / "passes";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw UserError("cannot create dump directory '" + dir.string() + "': " + ec.message());
  std::ofstream out(dir / (file + ".txt"));
  out << text;
}

}  // namespace pypto
