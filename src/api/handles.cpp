// Tensor handles as CANN PyPTO's C++ front end has them: a handle is an object with an
// identity. Assignment writes into an output or a declared tensor (CANN's operator= moves the
// storage, so the function's output is what was assigned last); any other handle is rebound.
// Every live handle is registered, so IF / ELSE can see which handles a body rebound and merge
// them (scopes.cpp).
#include <cctype>
#include <mutex>
#include <unordered_map>

#include "api/recording.h"

namespace pypto {
namespace detail {

namespace {

struct Registry {
  std::mutex mu;
  std::unordered_map<const Tensor*, uint64_t> live;  // handle -> its generation
  uint64_t next = 1;
};

// Never destroyed: a Tensor at namespace scope may outlive any static registry.
Registry& Reg() {
  static Registry* r = new Registry;
  return *r;
}

}  // namespace

void Handles::Register(const Tensor* t) {
  Registry& r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  r.live[t] = r.next++;
}

void Handles::Unregister(const Tensor* t) {
  Registry& r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  r.live.erase(t);
}

std::vector<HandleState> Handles::Snapshot() {
  Registry& r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<HandleState> out;
  out.reserve(r.live.size());
  for (auto& [t, gen] : r.live) out.push_back({const_cast<Tensor*>(t), gen, t->impl_});
  return out;
}

std::vector<HandleState> Handles::Changed(const std::vector<HandleState>& before) {
  Registry& r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<HandleState> out;
  for (const HandleState& h : before) {
    auto it = r.live.find(h.t);
    if (it != r.live.end() && it->second == h.gen && h.t->impl_ != h.impl) out.push_back(h);
  }
  return out;
}

std::shared_ptr<TensorImpl> Handles::Current(const HandleState& h) {
  Registry& r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.live.find(h.t);
  return it != r.live.end() && it->second == h.gen ? h.t->impl_ : nullptr;
}

void Handles::Rebind(const HandleState& h, std::shared_ptr<TensorImpl> impl) {
  Registry& r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.live.find(h.t);
  if (it != r.live.end() && it->second == h.gen) h.t->impl_ = std::move(impl);
}

}  // namespace detail

Tensor::Tensor() { detail::Handles::Register(this); }

Tensor::Tensor(std::shared_ptr<detail::TensorImpl> impl) : impl_(std::move(impl)) { detail::Handles::Register(this); }

Tensor::Tensor(const Tensor& other) : impl_(other.impl_) { detail::Handles::Register(this); }

Tensor::Tensor(Tensor&& other) noexcept : impl_(std::move(other.impl_)) { detail::Handles::Register(this); }

Tensor::~Tensor() { detail::Handles::Unregister(this); }

Tensor& Tensor::operator=(const Tensor& other) {
  if (this != &other) Assign(other.impl_);
  return *this;
}

Tensor& Tensor::operator=(Tensor&& other) {
  if (this != &other) Assign(other.impl_);
  return *this;
}

void Tensor::Assign(const std::shared_ptr<detail::TensorImpl>& value) {
  api::Recording* r = api::CurrentOrNull();
  if (r == nullptr || !impl_ || !value || impl_ == value || impl_->serial != r->serial || impl_->id < 0 ||
      !impl_->poison.empty()) {
    impl_ = value;
    return;
  }
  const Function& f = r->rec.function();
  const Value& dst = f.value(impl_->id);
  bool storage = (dst.kind == ValueKind::Output || dst.kind == ValueKind::Created) && f.MemoryRoot(dst.id) == dst.id;
  if (!storage) {  // an intermediate, a view, an input: CANN rebinds the handle
    impl_ = value;
    return;
  }
  // The value's line: operator= has no room for a source_location, and `out = Add(a, b)` is one
  // statement.
  SourceLoc loc = value->serial == r->serial && value->id >= 0 ? f.value(value->id).loc : SourceLoc{};
  std::string target = "'" + dst.name + "'";
  if (!value->poison.empty()) throw UserError(value->poison, loc);
  if (value->serial != r->serial || value->id < 0)
    throw UserError(target + " = " + (value->name.empty() ? "a tensor" : "'" + value->name + "'") +
                        ": the value is not part of the function '" + r->name + "' being recorded",
                    loc, "list it among FUNCTION's inputs or outputs, or compute it inside the body");
  const Value& src = f.value(value->id);
  std::string what = target + " = %" + src.name + ": " + target + " is " + DataTypeName(dst.dtype) +
                     ShapeStr(dst.shape) + " and the value " + DataTypeName(src.dtype) + ShapeStr(src.shape);
  if (src.dtype != dst.dtype)
  {
    std::string cann = "DT_";  // the C++ API's name of the dtype
    for (char c : std::string(DataTypeName(dst.dtype))) cann += static_cast<char>(std::toupper(c));
    throw UserError(what + "; assigning to an output or a declared tensor writes the value into it", loc,
                    "Cast(value, " + cann + ") first");
  }
  if (src.shape.size() != dst.shape.size())
    throw UserError(what + "; assigning to an output or a declared tensor writes the value into it", loc,
                    "the shapes must be equal (Reshape the value, or Assemble it into a window)");
  std::vector<Expr> src_shape = src.shape, dst_shape = dst.shape;
  int dst_id = impl_->id, src_id = value->id;
  for (size_t d = 0; d < src_shape.size(); ++d) {
    auto a = src_shape[d].as_const(), b = dst_shape[d].as_const();
    if (a && b && *a != *b)
      throw UserError(what + "; assigning to an output or a declared tensor writes the value into it", loc,
                      "the shapes must be equal (Assemble(value, offsets, " + dst.name + ") writes a window)");
    if (!(a && b)) r->rec.AssumeEqual(src_shape[d], dst_shape[d], what, loc);
  }
  r->rec.Assemble(src_id, std::vector<Expr>(src_shape.size(), Expr(0)), dst_id, loc);
}

}  // namespace pypto
