#include "kiln/array.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <new>
#include <sstream>

#include "core/allocator.h"
#include "core/dispatch.h"
#include "core/mode.h"
#include "kiln/primitive.h"

namespace kiln {

// default_device, default_stream and to_stream: src/core/stream.cpp (the stream table).

namespace detail {

// Buffers come from the buffer cache (core/allocator.cpp), which takes blocks from the aligned
// operator new, so that a program that replaces the global operator new (the hostile-file tests count
// every byte kiln allocates) sees them too.
Data::~Data() {
  if (!owner && ptr) buffer_free(ptr, nbytes);
}

std::shared_ptr<Data> allocate(size_t nbytes) {
  auto d = std::make_shared<Data>();
  d->ptr = buffer_malloc(nbytes);
  d->nbytes = nbytes;
  return d;
}

ArrayDesc::ArrayDesc(Shape s, Dtype t) : shape(std::move(s)), dtype(t) {
  size = shape_size(shape);
  strides = row_major_strides(shape);
}

ArrayDesc::~ArrayDesc() {
  // Unlink the graph below this node iteratively: move the inputs of every node that is about to die
  // into a work list, so destructors never recurse through the graph.
  if (!node || node.use_count() != 1) return;
  std::vector<array> work = std::move(node->inputs);
  node.reset();
  while (!work.empty()) {
    array a = std::move(work.back());
    work.pop_back();
    auto d = a.desc_ptr();
    a = array();
    if (d && d.use_count() == 1 && d->node && d->node.use_count() == 1) {
      for (auto& in : d->node->inputs) work.push_back(std::move(in));
      d->node->inputs.clear();
    }
  }
}

}  // namespace detail

Strides row_major_strides(const Shape& shape) {
  Strides st(shape.size());
  int64_t acc = 1;
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    st[i] = acc;
    acc *= std::max<int64_t>(shape[i], 1);
  }
  return st;
}

size_t shape_size(const Shape& shape, const char* api) {
  uint64_t n = 1;
  for (auto d : shape) {
    if (d < 0) {
      std::ostringstream os;
      os << "[" << api << "] Shape dimensions must be non-negative but found " << shape << ".";
      throw std::invalid_argument(os.str());
    }
    if (d != 0 && n > (uint64_t(1) << 62) / static_cast<uint64_t>(d)) {
      std::ostringstream os;
      os << "[" << api << "] Shape " << shape << " has too many elements.";
      throw std::invalid_argument(os.str());
    }
    n *= static_cast<uint64_t>(d);
  }
  return static_cast<size_t>(n);
}

array::array(Shape shape, Dtype dtype) : desc_(std::make_shared<detail::ArrayDesc>(std::move(shape), dtype)) {
  alloc();
}

array::array(std::shared_ptr<detail::Data> data, Shape shape, Dtype dtype, int64_t offset)
    : desc_(std::make_shared<detail::ArrayDesc>(std::move(shape), dtype)) {
  desc_->data = std::move(data);
  desc_->offset = offset;
}

array::array(void* data, Shape shape, Dtype dtype, const std::function<void(void*)>& deleter)
    : desc_(std::make_shared<detail::ArrayDesc>(std::move(shape), dtype)) {
  if (!data && desc_->size > 0) throw std::invalid_argument("[array] Expected a buffer, found a null pointer.");
  auto d = std::make_shared<detail::Data>();
  d->ptr = data;
  d->nbytes = desc_->size * dtype.size;
  d->owner = std::shared_ptr<void>(data, [deleter](void* p) {
    if (deleter) deleter(p);
  });
  desc_->data = std::move(d);
}

namespace {
// The buffer's pointer, once it is known to hold `shape`'s elements (before any array owns it, so a
// refused buffer stays the caller's).
void* checked_buffer(const allocator::Buffer& b, const Shape& shape, Dtype dtype) {
  size_t n = dtype.size;
  for (auto d : shape) {
    if (d < 0) throw std::invalid_argument("[array] Shape dimensions must be non-negative.");
    n *= static_cast<size_t>(d);
  }
  if (n > b.size()) {
    throw std::invalid_argument("[array] The buffer holds " + std::to_string(b.size()) + " bytes; the array needs " +
                                std::to_string(n) + ".");
  }
  return b.raw_ptr();
}
}  // namespace

array::array(allocator::Buffer data, Shape shape, Dtype dtype, const std::function<void(allocator::Buffer)>& deleter)
    : array(checked_buffer(data, shape, dtype), shape, dtype, [data, deleter](void*) {
        if (deleter) deleter(data);
      }) {}

array::array(Shape shape, Dtype dtype, std::shared_ptr<Node> node, uint32_t out_index)
    : desc_(std::make_shared<detail::ArrayDesc>(std::move(shape), dtype)) {
  desc_->node = std::move(node);
  desc_->out_index = out_index;
  // As MLX: while a function is traced or transformed, what is computed from a tracer is a tracer (so
  // that evaluating it inside the function keeps its graph for the transform, eval.cpp).
  if (desc_->node && (detail::in_tracing() || detail::in_transform())) {
    for (auto& in : desc_->node->inputs) {
      if (in.valid() && in.desc().tracer) {
        desc_->tracer = true;
        break;
      }
    }
  }
}

array array::from_bytes(const void* bytes, size_t nbytes, Shape shape, Dtype dtype) {
  array a(std::move(shape), dtype);
  if (a.nbytes() != nbytes) {
    throw std::invalid_argument("[array] Expected " + std::to_string(a.nbytes()) + " bytes for the shape and dtype but found " +
                                std::to_string(nbytes) + ".");
  }
  if (nbytes) std::memcpy(a.raw_data(), bytes, nbytes);
  return a;
}

array::Flags array::flags() const {
  Flags f;
  auto& d = desc();
  if (d.size == 0) return f;
  const size_t nd = d.shape.size();
  int64_t expect = 1;
  for (size_t k = nd; k-- > 0;) {  // row-major: the last axis varies fastest
    if (d.shape[k] == 1) continue;
    if (d.strides[k] != expect) f.row_contiguous = false;
    expect *= d.shape[k];
  }
  expect = 1;
  for (size_t k = 0; k < nd; ++k) {
    if (d.shape[k] == 1) continue;
    if (d.strides[k] != expect) f.col_contiguous = false;
    expect *= d.shape[k];
  }
  if (d.col_contiguous_kept >= 0) f.col_contiguous = d.col_contiguous_kept != 0;
  // Dense in some order: the non-broadcast axes, sorted by stride, tile the span without gaps.
  std::vector<std::pair<int64_t, int64_t>> axes;  // (|stride|, size)
  for (size_t k = 0; k < nd; ++k) {
    if (d.shape[k] > 1 && d.strides[k] != 0) axes.emplace_back(std::llabs(d.strides[k]), d.shape[k]);
  }
  std::sort(axes.begin(), axes.end());
  expect = 1;
  for (auto& [st, n] : axes) {
    if (st != expect) f.contiguous = false;
    expect *= n;
  }
  return f;
}

size_t array::data_size() const {
  auto& d = desc();
  if (d.size == 0) return 0;
  int64_t span = 1;
  for (size_t k = 0; k < d.shape.size(); ++k) span += static_cast<int64_t>(d.shape[k] - 1) * std::llabs(d.strides[k]);
  return static_cast<size_t>(span);
}

bool array::is_tracer() const { return desc().tracer && (detail::in_tracing() || detail::in_transform()); }

int32_t array::shape(int dim) const {
  int nd = static_cast<int>(ndim());
  int ax = dim < 0 ? dim + nd : dim;
  if (ax < 0 || ax >= nd) {
    // out_of_range, as MLX's (its shape(dim) indexes the shape vector with at()).
    throw std::out_of_range("[array::shape] Axis " + std::to_string(dim) + " is out of bounds for an array with " +
                            std::to_string(nd) + " dimensions.");
  }
  return desc().shape[ax];
}

int64_t array::strides(int dim) const {
  int nd = static_cast<int>(ndim());
  int ax = dim < 0 ? dim + nd : dim;
  if (ax < 0 || ax >= nd) {
    throw std::invalid_argument("[array::strides] Axis " + std::to_string(dim) + " is out of bounds for an array with " +
                                std::to_string(nd) + " dimensions.");
  }
  return desc().strides[ax];
}

void* array::raw_data() const {
  auto& d = desc();
  if (!d.data) throw std::invalid_argument("[array::data] The array is not evaluated; call eval() first.");
  return static_cast<char*>(d.data->ptr) + d.offset * static_cast<int64_t>(d.dtype.size);
}

void array::check_count(size_t n) const {
  if (n != size()) {
    std::ostringstream os;
    os << "[array] Data size " << n << " does not match the size " << size() << " of shape " << shape() << ".";
    throw std::invalid_argument(os.str());
  }
}

void array::store_from(const void* src, Dtype src_type, size_t n) {
  if (!desc_->data) alloc();
  convert_values(src, src_type, raw_data(), dtype(), n);
}

void array::set_data(std::shared_ptr<detail::Data> data) {
  auto& d = desc();
  d.data = std::move(data);
  d.offset = 0;
  d.strides = row_major_strides(d.shape);
  d.row_contiguous = true;
  d.col_contiguous_kept = -1;
}

void array::alloc() { set_data(detail::allocate(nbytes())); }

void array::set_view(const array& src, Strides strides, int64_t offset_elems) {
  auto& d = desc();
  d.data = src.desc().data;
  d.offset = offset_elems;
  d.strides = std::move(strides);
  d.col_contiguous_kept = -1;
  // Row-contiguous when the strides equal the row-major strides over the non-unit dimensions.
  bool rc = true;
  int64_t acc = 1;
  for (int i = static_cast<int>(d.shape.size()) - 1; i >= 0; --i) {
    if (d.shape[i] == 1) continue;
    if (d.strides[i] != acc) {
      rc = false;
      break;
    }
    acc *= d.shape[i];
  }
  if (d.size == 0) rc = true;
  d.row_contiguous = rc;
  if (rc) d.strides = row_major_strides(d.shape);
}

void array::detach() {
  if (desc_) desc_->node.reset();
}

const std::vector<array>& array::inputs() const {
  static const std::vector<array> empty;
  auto& d = desc();
  return d.node ? d.node->inputs : empty;
}

std::vector<array> array::outputs() const {
  auto& d = desc();
  if (!d.node) return {*this};
  std::vector<array> out;
  auto& node = d.node;
  for (size_t i = 0; i < node->outputs.size(); ++i) {
    if (i == d.out_index) {
      out.push_back(*this);
      continue;
    }
    auto sp = node->outputs[i].lock();
    if (!sp) {
      // The sibling was dropped by the user; recreate a handle on the same node.
      array s(node->specs[i].shape, node->specs[i].dtype, node, static_cast<uint32_t>(i));
      node->outputs[i] = s.desc_ptr();
      out.push_back(s);
    } else {
      out.push_back(array(sp));
    }
  }
  return out;
}

std::vector<array> array::siblings() const {
  std::vector<array> out;
  if (!has_primitive()) return out;
  for (auto& o : outputs()) {
    if (!o.is_same(*this)) out.push_back(o);
  }
  return out;
}

void convert_values(const void* src, Dtype src_type, void* dst, Dtype dst_type, size_t n) {
  detail::dispatch_all(src_type, [&](auto s) {
    using S = decltype(s);
    detail::dispatch_all(dst_type, [&](auto t) {
      using T = decltype(t);
      const S* in = static_cast<const S*>(src);
      T* out = static_cast<T*>(dst);
      if constexpr (std::is_same_v<S, T>) {
        if (n) std::memcpy(out, in, n * sizeof(T));  // an empty vector's data() may be null (UB for memcpy)
      } else {
        for (size_t i = 0; i < n; ++i) out[i] = detail::cast_to<T>(in[i]);
      }
    });
  });
}

// ---- printing, in MLX's style ----

namespace {

template <typename T>
void print_value(std::ostream& os, T v) {
  if constexpr (std::is_same_v<T, bool>) {
    os << (v ? "true" : "false");
  } else if constexpr (std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>) {
    os << static_cast<int>(v);
  } else if constexpr (detail::is_complex_v<T>) {
    os << v.real() << (v.imag() >= 0 || std::isnan(v.imag()) ? "+" : "-") << std::abs(v.imag()) << "j";
  } else if constexpr (detail::is_half_v<T>) {
    os << static_cast<float>(v);
  } else {
    os << v;
  }
}

template <typename T>
void print_rec(std::ostream& os, const array& a, int dim, int64_t off, int indent) {
  const char* base = static_cast<const char*>(a.buffer()->ptr);
  int nd = static_cast<int>(a.ndim());
  os << "[";
  int n = a.shape()[dim];
  for (int i = 0; i < n; ++i) {
    int64_t o = off + i * a.strides()[dim];
    if (dim == nd - 1) {
      T v;
      std::memcpy(&v, base + o * static_cast<int64_t>(sizeof(T)), sizeof(T));
      print_value(os, v);
      if (i + 1 < n) os << ", ";
    } else {
      print_rec<T>(os, a, dim + 1, o, indent + 1);
      if (i + 1 < n) {
        os << ",\n" << std::string(indent + 1, ' ');
      }
    }
  }
  os << "]";
}

}  // namespace

std::ostream& operator<<(std::ostream& os, const Shape& s) {
  os << "(";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? "," : "") << s[i];
  return os << ")";
}

std::ostream& operator<<(std::ostream& os, const array& a0) {
  array a = a0;
  if (!a.valid()) return os << "array(<empty>)";
  a.eval();
  os << "array(";
  detail::dispatch_all(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (a.ndim() == 0) {
      T v;
      std::memcpy(&v, a.raw_data(), sizeof(T));
      print_value(os, v);
    } else {
      print_rec<T>(os, a, 0, a.offset(), 6);
    }
  });
  return os << ", dtype=" << a.dtype() << ")";
}

}  // namespace kiln
