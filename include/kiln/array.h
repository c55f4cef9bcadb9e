// kiln: the lazy array. An array is a shared handle to a descriptor that holds either data (a shared
// buffer with strides and an offset, so views never copy) or the graph node that will compute it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "kiln/dtype.h"
#include "kiln/memory.h"

namespace kiln {

using Shape = std::vector<int32_t>;
using Strides = std::vector<int64_t>;

struct Device {
  enum class DeviceType : int32_t { cpu = 0, gpu = 1 };
  static constexpr DeviceType cpu = DeviceType::cpu;
  static constexpr DeviceType gpu = DeviceType::gpu;
  DeviceType type = DeviceType::cpu;
  int index = 0;
  constexpr Device(DeviceType t = DeviceType::cpu, int i = 0) : type(t), index(i) {}
  bool operator==(const Device&) const = default;
};

struct Stream {
  int index = 0;
  Device device{};
  constexpr Stream() = default;
  // Explicit, as in MLX: otherwise `{3}` could mean a stream where an op also takes axes.
  constexpr explicit Stream(int i, Device d = Device{}) : index(i), device(d) {}
  bool operator==(const Stream&) const = default;
};

using StreamOrDevice = std::variant<std::monostate, Stream, Device>;

Device default_device();
Stream default_stream(Device d);
// The stream an op records: the given stream, the default stream of the given device, or the CPU default.
Stream to_stream(StreamOrDevice s);

struct Node;
class Primitive;
class array;

namespace detail {
// A block of memory owned by one or more arrays. `owner` keeps external memory (an mmap, a file
// mapping, a parent buffer) alive; when it is null the block came from detail::allocate(nbytes) (the
// buffer cache, kiln/memory.h), `nbytes` must stay as allocated, and the block is given back here.
struct Data {
  void* ptr = nullptr;
  size_t nbytes = 0;
  std::shared_ptr<void> owner;
  Data() = default;
  Data(const Data&) = delete;
  Data& operator=(const Data&) = delete;
  ~Data();
};
std::shared_ptr<Data> allocate(size_t nbytes);

struct ArrayDesc {
  Shape shape;
  Strides strides;
  size_t size = 0;
  Dtype dtype = float32;
  std::shared_ptr<Data> data;
  int64_t offset = 0;  // in elements
  bool row_contiguous = true;
  std::shared_ptr<Node> node;  // null once evaluated (or for leaves)
  uint32_t out_index = 0;
  bool tracer = false;  // set_tracer: an input of a function being traced
  // MLX keeps an input's layout flags on a reshape that shares the buffer of a data that is not
  // row-contiguous (its flags are stored, not derived): this holds the kept col_contiguous (-1: derive it).
  int8_t col_contiguous_kept = -1;
  ArrayDesc(Shape s, Dtype t);
  ~ArrayDesc();  // iterative, so dropping a 10^6-deep lazy chain does not overflow the stack
};
}  // namespace detail

Strides row_major_strides(const Shape& shape);
// Number of elements of `shape`; throws std::invalid_argument on negative dimensions or overflow.
size_t shape_size(const Shape& shape, const char* api = "array");

class array {
 public:
  array() = default;

  // Constrained to element types, so overload resolution that probes array(U) for other U (a Shape,
  // a Dtype, through std::optional<array>) fails softly instead of instantiating dtype_of<U>.
  template <typename T>
    requires requires { TypeToDtype<std::remove_cv_t<T>>::value; }
  explicit array(T val, Dtype dtype = dtype_of<T>) : array(Shape{}, dtype) {
    store_from(&val, storage_dtype_of<T>, 1);
  }
  template <typename T>
  array(std::initializer_list<T> data, Dtype dtype = dtype_of<T>)
      : array(Shape{static_cast<int32_t>(data.size())}, dtype) {
    store_from(data.begin(), storage_dtype_of<T>, data.size());
  }
  // As MLX's: a list whose elements do not all have one type (`{3, 2.5}`, `{1.0f, inf}`) is float32,
  // and so is the empty list `{}` (the template above cannot deduce either).
  array(std::initializer_list<float> data) : array(Shape{static_cast<int32_t>(data.size())}, float32) {
    store_from(data.begin(), float32, data.size());
  }
  // `array({}, int32)`: an empty array of the given type.
  array(std::initializer_list<int> data, Dtype dtype) : array(Shape{static_cast<int32_t>(data.size())}, dtype) {
    store_from(data.begin(), int32, data.size());
  }
  template <typename T>
  array(std::initializer_list<T> data, const Shape& shape, Dtype dtype = dtype_of<T>) : array(shape, dtype) {
    check_count(data.size());
    store_from(data.begin(), storage_dtype_of<T>, data.size());
  }
  template <typename T>
  array(const T* data, const Shape& shape, Dtype dtype = dtype_of<T>) : array(shape, dtype) {
    store_from(data, storage_dtype_of<T>, size());
  }
  template <typename T>
  array(const std::vector<T>& data, const Shape& shape, Dtype dtype = dtype_of<T>) : array(shape, dtype) {
    check_count(data.size());
    if constexpr (std::is_same_v<T, bool>) {  // packed bits: no data() to read from
      std::unique_ptr<bool[]> values(new bool[data.size() > 0 ? data.size() : 1]);
      std::copy(data.begin(), data.end(), values.get());
      store_from(values.get(), storage_dtype_of<T>, data.size());
    } else {
      store_from(data.data(), storage_dtype_of<T>, data.size());
    }
  }
  // Elements read through any iterator (`shape`'s element count of them), as MLX's array(It, Shape).
  template <typename It>
    requires(!std::is_pointer_v<It> && std::input_iterator<It> &&
             requires { TypeToDtype<std::remove_cv_t<typename std::iterator_traits<It>::value_type>>::value; })
  array(It first, const Shape& shape,
        Dtype dtype = dtype_of<typename std::iterator_traits<It>::value_type>)
      : array(shape, dtype) {
    using T = std::remove_cv_t<typename std::iterator_traits<It>::value_type>;
    // A plain buffer, not a std::vector: std::vector<bool> (whose iterators MLX accepts) has no data().
    const size_t n = size();
    std::unique_ptr<T[]> values(new T[n > 0 ? n : 1]);
    for (size_t i = 0; i < n; ++i, ++first) values[i] = *first;
    store_from(values.get(), storage_dtype_of<T>, n);
  }
  // The caller's row-major buffer of `shape`'s elements, used without copying; `deleter(data)` runs
  // once, when the last array (or view) using the buffer is gone.
  array(void* data, Shape shape, Dtype dtype, const std::function<void(void*)>& deleter);
  // MLX's form: a buffer from allocator::malloc (at least `shape`'s elements), `deleter(buffer)` run once
  // when the last array using it is gone (it usually calls allocator::free).
  array(allocator::Buffer data, Shape shape, Dtype dtype, const std::function<void(allocator::Buffer)>& deleter);
  // Wrap an existing buffer without copying (row-major, `offset` elements into the buffer).
  array(std::shared_ptr<detail::Data> data, Shape shape, Dtype dtype, int64_t offset = 0);
  // An unevaluated output of `node` (used by primitives).
  array(Shape shape, Dtype dtype, std::shared_ptr<Node> node, uint32_t out_index);
  // MLX's: the single output of `primitive` (an object of one of kiln/primitives.h's classes) applied
  // to `inputs`. Throws std::invalid_argument when the row does not take that many inputs or its shape
  // rule gives other outputs. make_arrays: every output of a multi-output primitive.
  array(Shape shape, Dtype dtype, std::shared_ptr<Primitive> primitive, std::vector<array> inputs);
  static std::vector<array> make_arrays(std::vector<Shape> shapes, const std::vector<Dtype>& dtypes,
                                        const std::shared_ptr<Primitive>& primitive, std::vector<array> inputs);
  // Raw little-endian bytes, copied into a new buffer. Throws when the byte count does not match.
  static array from_bytes(const void* bytes, size_t nbytes, Shape shape, Dtype dtype);

  bool valid() const { return desc_ != nullptr; }
  const Shape& shape() const { return desc().shape; }
  int32_t shape(int dim) const;
  const Strides& strides() const { return desc().strides; }
  int64_t strides(int dim) const;
  size_t ndim() const { return desc().shape.size(); }
  size_t size() const { return desc().size; }
  Dtype dtype() const { return desc().dtype; }
  size_t itemsize() const { return desc().dtype.size; }
  size_t nbytes() const { return size() * itemsize(); }

  // Evaluation. `item` evaluates; `data` requires an evaluated array.
  void eval();
  bool is_available() const { return desc_ && desc_->data != nullptr; }
  template <typename T>
  T item();
  template <typename T>
  T item() const;
  template <typename T>
  T* data() {
    return static_cast<T*>(raw_data());
  }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(raw_data());
  }
  void* raw_data() const;

  // Layout flags, as MLX's array::flags(), derived from the shape and strides: row_contiguous and
  // col_contiguous say the elements are dense in row- (column-) major order (axes of size 1 do not
  // count); contiguous says they are dense in some order once broadcast (stride 0) axes are left out,
  // i.e. the product of the other axes' sizes equals data_size(). An empty array has all three.
  // One exception keeps MLX's behaviour: a reshape that views (does not copy) data that is not
  // row-contiguous keeps its input's col_contiguous, as MLX's stored flags do (reshaping a (10, 10)
  // transpose to (2, 5, 10) says col_contiguous there although its strides are (5, 1, 10)).
  struct Flags {
    bool contiguous = true;
    bool row_contiguous = true;
    bool col_contiguous = true;
  };
  Flags flags() const;
  // Elements of the buffer the array's view spans (from its lowest to its highest element); equals
  // size() for a dense array, 1 for a broadcast scalar, 0 for an empty array.
  size_t data_size() const;

  // Tracers: arrays a function transformation passes in while it traces the function. is_tracer()
  // is true only while such a trace or a transform (vjp, jvp) runs (outside one, set_tracer(true) has no
  // effect); an array computed from a tracer then is one too, and keeps its graph when evaluated.
  void set_tracer(bool t) { desc().tracer = t; }
  bool is_tracer() const;

  // Iteration over the first axis, as MLX's: each element is the sub-array a[i] (lazy: a slice and a
  // reshape). Throws std::invalid_argument for a 0-d array.
  class ArrayIterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using difference_type = std::ptrdiff_t;
    using value_type = const array;
    using reference = value_type;
    explicit ArrayIterator(const array& a, int32_t idx = 0);
    const array operator*() const;
    ArrayIterator& operator++() {
      ++idx_;
      return *this;
    }
    ArrayIterator operator++(int) {
      auto prev = *this;
      ++idx_;
      return prev;
    }
    ArrayIterator& operator+(difference_type n) {
      idx_ += static_cast<int32_t>(n);
      return *this;
    }
    friend bool operator==(const ArrayIterator& a, const ArrayIterator& b) {
      return a.arr_->id() == b.arr_->id() && a.idx_ == b.idx_;
    }

   private:
    const array* arr_;
    int32_t idx_;
  };
  ArrayIterator begin() const { return ArrayIterator(*this, 0); }
  ArrayIterator end() const { return ArrayIterator(*this, shape(0)); }

  // Graph access.
  bool has_primitive() const { return desc_ && desc_->node != nullptr; }
  // MLX's view of the node: an object of the row's class (kiln/primitives.h), made on first use and
  // shared by the node's outputs. Throws std::invalid_argument for an array without a primitive.
  Primitive& primitive() const;
  std::shared_ptr<Primitive> primitive_ptr() const;
  const std::shared_ptr<Node>& node() const { return desc().node; }
  uint32_t output_index() const { return desc().out_index; }
  const std::vector<array>& inputs() const;
  // Every output of this array's primitive, this one included, in output order.
  std::vector<array> outputs() const;
  // The other outputs of this array's primitive.
  std::vector<array> siblings() const;
  uintptr_t id() const { return reinterpret_cast<uintptr_t>(desc_.get()); }
  bool is_same(const array& o) const { return desc_ == o.desc_; }

  // For kernels: storage management.
  bool row_contiguous() const { return desc().row_contiguous; }
  int64_t offset() const { return desc().offset; }
  const std::shared_ptr<detail::Data>& buffer() const { return desc().data; }
  void set_data(std::shared_ptr<detail::Data> data);  // row-contiguous, offset 0
  void alloc();                                         // fresh row-contiguous buffer
  void set_view(const array& src, Strides strides, int64_t offset_elems);
  void detach();  // drop the primitive (after evaluation)

  std::shared_ptr<detail::ArrayDesc> desc_ptr() const { return desc_; }
  explicit array(std::shared_ptr<detail::ArrayDesc> d) : desc_(std::move(d)) {}

  array(Shape shape, Dtype dtype);  // an evaluated, uninitialised, row-contiguous array

 private:
  detail::ArrayDesc& desc() const {
    if (!desc_) throw std::invalid_argument("[array] Use of an empty (default-constructed) array.");
    return *desc_;
  }
  void check_count(size_t n) const;
  void store_from(const void* src, Dtype src_type, size_t n);
  std::shared_ptr<detail::ArrayDesc> desc_;
};

// Convert `n` values of type `src` to `dst` (both contiguous). Used by constructors and AsType.
void convert_values(const void* src, Dtype src_type, void* dst, Dtype dst_type, size_t n);

template <typename T>
T array::item() {
  eval();
  return static_cast<const array&>(*this).item<T>();
}
template <typename T>
T array::item() const {
  if (size() != 1) {
    throw std::invalid_argument("[item] item can only be called on arrays of size 1, found size " +
                                std::to_string(size()) + ".");
  }
  if (!is_available()) const_cast<array*>(this)->eval();
  T out;
  convert_values(raw_data(), dtype(), &out, storage_dtype_of<T>, 1);
  return out;
}

std::ostream& operator<<(std::ostream& os, const array& a);
std::ostream& operator<<(std::ostream& os, const Shape& s);

void eval(std::vector<array> outputs);
template <typename... Arrays>
void eval(Arrays&&... as) {
  eval(std::vector<array>{std::forward<Arrays>(as)...});
}
void async_eval(std::vector<array> outputs);

}  // namespace kiln
