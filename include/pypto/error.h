// Two error kinds, as in Halide and hw-native-sys/pypto: UserError for mistakes in the
// user's program (reported with the user's source line), InternalError for compiler bugs.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace pypto {

/// A position in the user's (Python or C++) source: file, line, and the line's text.
struct SourceLoc {
  std::string file;
  int line = 0;
  int column = 0;    // 0-based column of the expression, -1 if unknown
  std::string text;  // the source line, for the caret display
  bool known() const { return line > 0; }
  std::string str() const;
};

/// Formats "file:line\n    text\n    ^" for error messages.
std::string FormatLocation(const SourceLoc& loc);

class UserError : public std::runtime_error {
 public:
  UserError(const std::string& msg, const SourceLoc& loc = {}, const std::string& hint = "");
  const std::string& message() const { return message_; }
  const SourceLoc& loc() const { return loc_; }
  const std::string& hint() const { return hint_; }

 private:
  std::string message_;
  SourceLoc loc_;
  std::string hint_;
};

class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& msg) : std::logic_error("internal compiler error: " + msg) {}
};

namespace detail {
template <typename... Args>
std::string Concat(Args&&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

}  // namespace pypto

/// Internal invariant check: a failure is a compiler bug, never the user's fault.
#define PYPTO_CHECK(cond, ...)                                                          \
  do {                                                                                  \
    if (!(cond))                                                                        \
      throw ::pypto::InternalError(::pypto::detail::Concat(__FILE__, ":", __LINE__, ": ", \
                                                           #cond " failed. ", ##__VA_ARGS__)); \
  } while (0)
