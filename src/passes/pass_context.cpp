#include "passes/pass_context.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "ir/error.h"

namespace pypto {

PassContext::PassContext(const CompileOptions& opts) : opts_(opts), machine_(&GetMachine(opts.machine)) {}

void PassContext::Dump(const std::string& name, const std::string& text, double ms,
                       const std::function<std::string()>& json) {
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
  if (!json) return;
  // The level's JSON object, with the pass that produced it in front.
  std::string j = json();
  if (j.empty() || j[0] != '{') return;
  char ms_buf[32];
  std::snprintf(ms_buf, sizeof(ms_buf), "%.6f", ms);
  std::ofstream jout(dir / (file + ".json"));
  jout << "{\"pass\":\"" << name << "\",\"index\":" << (dumps_.size() - 1) << ",\"ms\":" << ms_buf
       << (j.size() > 2 ? "," : "") << j.substr(1);
}

}  // namespace pypto
