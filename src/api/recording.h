// The state behind the C++ API: the function being recorded on this thread (one Recorder, the
// same the Python frontend drives), the recorded functions by name, and the options.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "frontend/recorder.h"
#include "ir/program.h"
#include "pypto/pypto.h"
#include "runtime/runtime.h"

namespace pypto {

namespace detail {

/// A Tensor handle: a parameter's declaration, or a value of the function being recorded.
struct TensorImpl {
  DataType dtype = DataType::FP32;
  std::vector<Expr> shape;  // a declaration's shape (-1: DYNAMIC)
  std::string name;
  TileOpFormat format = TileOpFormat::TILEOP_ND;
  // While a FUNCTION records: the recording (its serial) and the value id in its recorder.
  uint64_t serial = 0;
  int id = -1;
  // Set on a handle bound after an IF / ELSE whose paths left it with values that cannot be
  // merged: using it raises this message.
  std::string poison;
};

/// A live handle and the tensor it held when it was looked at.
struct HandleState {
  Tensor* t = nullptr;
  uint64_t gen = 0;  // tells a handle from a later one at the same address
  std::shared_ptr<TensorImpl> impl;
};

/// The registry of live Tensor handles (api/handles.cpp).
struct Handles {
  static void Register(const Tensor* t);
  static void Unregister(const Tensor* t);
  /// Every live handle (empty ones too: a body may bind them).
  static std::vector<HandleState> Snapshot();
  /// The handles of `before` that are still alive and now hold another tensor (as they were).
  static std::vector<HandleState> Changed(const std::vector<HandleState>& before);
  /// What the handle holds now (null when it is gone).
  static std::shared_ptr<TensorImpl> Current(const HandleState& h);
  /// Binds the handle to `impl` if it is still alive.
  static void Rebind(const HandleState& h, std::shared_ptr<TensorImpl> impl);
};

}  // namespace detail

namespace api {

/// One FUNCTION being recorded.
struct Recording {
  std::string name;
  uint64_t serial = 0;
  Recorder rec;
  std::vector<std::shared_ptr<detail::TensorImpl>> params;  // inputs then outputs
  size_t num_inputs = 0, num_outputs = 0;                   // as FUNCTION declared them
  explicit Recording(const std::string& n, uint64_t s) : name(n), serial(s), rec(n) {}
};

/// A recorded function, ready to compile: the tensor graph and its parameters.
struct RecordedFunction {
  Function fn;
  size_t num_inputs = 0, num_outputs = 0;
  SourceLoc loc;
  std::mutex mu;
  std::map<std::string, std::shared_ptr<CompiledFunction::Impl>> compiled;  // by options key
};

/// The options the API holds (the keys that act here; PyPTO's NPU keys are recorded).
struct Options {
  std::string machine = "cpu";
  bool reciprocal_division = false;
  int workers = 0;
  RunMode run_mode = RunMode::Native;
  SchedMode sched_mode = SchedMode::Fifo;
  double timeout_s = 0;
  std::string dump_dir;
  bool dump_passes = false;
  std::map<std::string, std::string> recorded;  // NPU keys: accepted, no effect here
  std::string Key() const;                      // what a compile depends on
};

/// The caller's position as the IR keeps it (with the source line's text, read once per file).
SourceLoc ToLoc(const Loc& loc);
/// The recording of this thread; UserError naming `op` outside FUNCTION.
Recording& Current(const char* op, const Loc& loc);
Recording* CurrentOrNull();
/// The value id of `t` in the current recording; UserError for an empty tensor or one of
/// another FUNCTION.
int Id(const Tensor& t, const char* op, const Loc& loc);
/// A handle on value `id` of the current recording.
Tensor Wrap(int id);
Options& GlobalOptions();
std::shared_ptr<RecordedFunction> Lookup(const std::string& name, const Loc& loc);
std::vector<std::string> Names();
/// The shape of a tensor now: the recorder's for a value of the current recording (dynamic dims
/// as symbols), the declared one otherwise (DYNAMIC as -1).
std::vector<Expr> ShapeOf(const detail::TensorImpl& t);
void Register(const std::string& name, std::shared_ptr<RecordedFunction> f);
void Begin(std::unique_ptr<Recording> r);
/// A number no other recording of this process has (a tensor made by one is told from another's).
uint64_t NextSerial();
std::unique_ptr<Recording> End();
/// Tile shapes set by TileShape::Current() outside FUNCTION: the defaults of the next one.
std::vector<int64_t>& DefaultVecTile();
std::vector<std::vector<int64_t>>& DefaultCubeTile();

}  // namespace api
}  // namespace pypto
