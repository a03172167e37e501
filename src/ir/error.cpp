#include "ir/error.h"

namespace pypto {

std::string SourceLoc::str() const {
  if (!known()) return "<unknown>";
  return file + ":" + std::to_string(line);
}

std::string FormatLocation(const SourceLoc& loc) {
  if (!loc.known()) return "";
  std::string out = "  File \"" + loc.file + "\", line " + std::to_string(loc.line) + "\n";
  if (!loc.text.empty()) {
    // Strip leading indentation but keep the caret aligned with the expression.
    size_t indent = loc.text.find_first_not_of(" \t");
    if (indent == std::string::npos) indent = 0;
    out += "    " + loc.text.substr(indent) + "\n";
    int col = loc.column >= 0 ? loc.column - static_cast<int>(indent) : 0;
    if (col < 0) col = 0;
    out += "    " + std::string(col, ' ') + "^\n";
  }
  return out;
}

static std::string Compose(const std::string& msg, const SourceLoc& loc, const std::string& hint) {
  // Appends only: GCC 12 warns (-Wrestrict, a false positive) on chains of operator+ here.
  std::string out = msg;
  if (loc.known()) {
    out += '\n';
    out += FormatLocation(loc);
  }
  if (!hint.empty()) {
    if (!loc.known()) out += '\n';
    out += "hint: ";
    out += hint;
  }
  return out;
}

UserError::UserError(const std::string& msg, const SourceLoc& loc, const std::string& hint)
    : std::runtime_error(Compose(msg, loc, hint)), message_(msg), loc_(loc), hint_(hint) {}

}  // namespace pypto
