#include "runtime/output_coverage.h"

#include <algorithm>
#include <exception>
#include <map>
#include <set>
#include <string>

namespace pypto {

namespace {

struct Interval {
  int64_t lo, hi;
};

// Whether the intervals cover [0, n).
bool Covers(std::vector<Interval> v, int64_t n) {
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.lo < b.lo; });
  int64_t reach = 0;
  for (auto& i : v) {
    if (i.lo > reach) break;
    reach = std::max(reach, i.hi);
  }
  return reach >= n;
}

// Work the proof may take per call (launches walked plus windows evaluated): past it, nothing is
// proven and the results are zeroed. A call is at least as much work as its launches; the budget
// keeps the proof a small part of it (it is remembered per set of dims, too).
constexpr int64_t kMaxWork = int64_t(1) << 16;

class Prover {
 public:
  Prover(const ExecGraph& g, const SymEnv& env) : g_(g), fn_(g.fn) {
    for (size_t i = 0; i < fn_.returns.size(); ++i) {
      index_[fn_.returns[i]] = static_cast<int>(i);
      std::vector<int64_t> s;
      for (auto& d : fn_.value(fn_.returns[i]).shape) s.push_back(d.Eval(env));
      shapes_.push_back(s);
    }
    whole_.assign(shapes_.size(), false);
    slabs_.resize(shapes_.size());
    // A result some kernel reads (`out[i] = out[i] + x[i]`, a running state) may be read where
    // it was not written yet, and then its zeros count: only results no kernel reads qualify.
    read_.assign(shapes_.size(), false);
    for (const Kernel& k : g_.kernels)
      for (const KernelParam& kp : k.params) {
        if (!kp.read) continue;
        for (int v = kp.value;; v = fn_.Root(v)) {  // through views and reshapes to the memory
          if (auto r = index_.find(v); r != index_.end()) read_[r->second] = true;
          if (fn_.Root(v) == v) break;
        }
      }
  }

  std::vector<bool> Run(SymEnv env) {
    if (std::find(read_.begin(), read_.end(), false) == read_.end()) return whole_;  // (all read: none proven)
    Walk(g_.body, env);
    if (reads_data_ || work_ > kMaxWork) return whole_;  // (what a launch proved holds whatever follows)
    for (size_t r = 0; r < shapes_.size(); ++r)
      for (auto& [d, ivs] : slabs_[r])
        if (!whole_[r] && !read_[r] && Covers(ivs, shapes_[r][d])) whole_[r] = true;
    return whole_;
  }

 private:
  // Mirrors CallState::Walk: the same loops, the same launches.
  void Walk(const Region<LaunchNode>& r, SymEnv& env) {
    for (auto& e : r.entries) {
      if (reads_data_ || work_ > kMaxWork || AllWhole()) return;
      if (e.loop && e.loop->info.read) {
        reads_data_ = true;
        return;
      }
      if (e.loop) {
        const LoopInfo& l = e.loop->info;
        int64_t start = l.start.Eval(env), stop = l.stop.Eval(env), step = l.step.Eval(env);
        if (step <= 0) return;  // (the call itself reports it)
        for (int64_t i = start; i < stop && work_ <= kMaxWork; i += step) {
          env[l.var] = i;
          Walk(*e.loop->body, env);
        }
        env.erase(l.var);
        continue;
      }
      Launch(*e.item, env);
    }
  }

  void Launch(const LaunchNode& n, const SymEnv& env) {
    ++work_;
    const Kernel& k = g_.kernels[n.kernel];
    std::vector<int64_t> grid;
    for (auto& x : k.grid) grid.push_back(x.Eval(env));
    for (const KernelParam& kp : k.params) {
      if (!kp.write || fn_.value(kp.value).kind == ValueKind::Reshape) continue;
      auto ret = index_.find(fn_.Root(kp.value));
      if (ret == index_.end() || whole_[ret->second] || read_[ret->second]) continue;
      for (const PointAccess& a : g_.point_access[k.id])
        if (a.root == ret->first && a.write && a.regular && !a.adds && a.windows.size() == 1)
          Prove(a.windows[0], grid, env, ret->second);
    }
  }

  // One launch's stores to return `r`: window {start0, extent0, ...} at every grid point. When
  // each dim's window depends on at most one grid var, and no two dims on the same one, the
  // points' windows form a product set: the union is the product of each dim's union of
  // intervals, so a dim at a time decides.
  void Prove(const std::vector<Expr>& w, const std::vector<int64_t>& grid, const SymEnv& env, int r) {
    const auto& shape = shapes_[r];
    if (w.size() != 2 * shape.size()) return;
    SymEnv at = env;
    for (size_t j = 0; j < grid.size(); ++j) at[GridVar(static_cast<int>(j))] = 0;
    std::set<std::string> used;
    std::vector<std::vector<Interval>> dims(shape.size());
    try {
      for (size_t d = 0; d < shape.size(); ++d) {
        std::vector<std::string> vars;
        for (auto& v : w[2 * d].FreeVars())
          if (v.rfind("$c", 0) == 0) vars.push_back(v);
        for (auto& v : w[2 * d + 1].FreeVars())
          if (v.rfind("$c", 0) == 0 && std::find(vars.begin(), vars.end(), v) == vars.end()) vars.push_back(v);
        if (vars.size() > 1 || (vars.size() == 1 && !used.insert(vars[0]).second)) return;
        int64_t trips = 1;
        if (vars.size() == 1) {
          int j = std::stoi(vars[0].substr(2));
          if (j < 0 || j >= static_cast<int>(grid.size())) return;
          trips = grid[j];
        }
        work_ += trips;
        if (work_ > kMaxWork) return;
        for (int64_t c = 0; c < trips; ++c) {
          if (!vars.empty()) at[vars[0]] = c;
          int64_t lo = w[2 * d].Eval(at), hi = lo + w[2 * d + 1].Eval(at);
          lo = std::max<int64_t>(lo, 0);
          hi = std::min<int64_t>(hi, shape[d]);
          if (lo < hi) dims[d].push_back({lo, hi});
        }
        if (!vars.empty()) at[vars[0]] = 0;
      }
    } catch (const std::exception&) {
      return;  // a window that does not evaluate here proves nothing
    }
    int partial = -1;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (Covers(dims[d], shape[d])) continue;
      if (partial >= 0) return;  // partial along two dims: not a slab of the result
      partial = static_cast<int>(d);
    }
    if (partial < 0) {
      whole_[r] = true;
      return;
    }
    // Whole along every dim but one: slabs that launches of a loop may complete together.
    auto& ivs = slabs_[r][partial];
    ivs.insert(ivs.end(), dims[partial].begin(), dims[partial].end());
  }

  bool AllWhole() const {
    for (size_t r = 0; r < whole_.size(); ++r)
      if (!whole_[r] && !read_[r]) return false;
    return true;
  }

  const ExecGraph& g_;
  const Function& fn_;
  std::map<int, int> index_;  // returned value -> its position
  std::vector<std::vector<int64_t>> shapes_;
  std::vector<bool> whole_;
  std::vector<std::map<int, std::vector<Interval>>> slabs_;  // per return: dim -> written intervals
  std::vector<bool> read_;                                   // per return: some kernel reads it
  bool reads_data_ = false;
  int64_t work_ = 0;
};

}  // namespace

std::vector<bool> ReturnsWrittenWhole(const ExecGraph& g, const SymEnv& env) {
  try {
    return Prover(g, env).Run(env);
  } catch (const std::exception&) {  // a bound that does not evaluate here: nothing proven
    return std::vector<bool>(g.fn.returns.size(), false);
  }
}

}  // namespace pypto
