// kiln's devices and streams, with MLX's names (mlx/device.h, mlx/stream.h, mlx/utils.h).
//
// kiln runs everything on the CPU. Nodes recorded on a GPU stream (files written on a Mac, or an op
// given Device::gpu explicitly) evaluate through the CPU kernels until a GPU backend exists (see
// docs/architecture.md), but the GPU is not *available*: it cannot be made the default device and no
// GPU stream can be created, as in an MLX build without Metal or CUDA.
//
// An op given Device::gpu throws std::invalid_argument, as in MLX without a GPU (default_stream
// throws); an op given a Stream of the GPU (Stream(0, Device::gpu)) records it and runs on the CPU.
//
// Streams: the CPU's default stream has index 0; new_stream(Device::cpu) adds streams 1, 2, ...
// Evaluation is synchronous (eval and async_eval return once every output is computed), so a stream
// only names where a node was recorded; synchronize() has nothing to wait for.
#pragma once

#include <ostream>
#include <variant>

#include "kiln/array.h"

namespace kiln {

// Whether kiln can run work on `d` as its own device: true for the CPU, false for the GPU.
bool is_available(const Device& d);

// The default device stays the CPU: Device::gpu throws std::invalid_argument (no GPU backend).
void set_default_device(const Device& d);

// The default stream of `d`; Device::gpu throws std::invalid_argument.
Stream default_stream(Device d);

// Make `s` (a stream made by new_stream, or the default) the default stream of its device.
// Throws std::invalid_argument for a stream kiln did not make.
void set_default_stream(Stream s);

// A new stream on `d` (the CPU); Device::gpu throws std::invalid_argument.
Stream new_stream(Device d);

// The stream with the given index; throws std::out_of_range when there is none.
Stream get_stream(int index);

// Whether `s` is a stream of this process (the defaults or one made by new_stream).
bool stream_exists(const Stream& s);

// Wait for the work queued on the default stream (or on `s`): evaluation is synchronous in kiln,
// so this returns at once; a stream kiln did not make throws std::invalid_argument.
void synchronize();
void synchronize(Stream s);

// The stream an op records, with `default_` standing in when `s` names neither stream nor device.
Stream to_stream(StreamOrDevice s, Device default_);

// Makes a stream (or a device's default stream) the default for its lifetime, then restores the
// previous default device and stream. Throws std::invalid_argument when given neither.
class StreamContext {
 public:
  StreamContext(StreamOrDevice s);
  ~StreamContext();
  StreamContext(const StreamContext&) = delete;
  StreamContext& operator=(const StreamContext&) = delete;

 private:
  Stream previous_;
};

std::ostream& operator<<(std::ostream& os, const Device& d);
std::ostream& operator<<(std::ostream& os, const Stream& s);

// Backends present in this build, as MLX's gpu::is_available(), metal::is_available() and
// cu::is_available() report them: kiln has none of them.
namespace gpu {
inline bool is_available() { return false; }
}  // namespace gpu
namespace metal {
inline bool is_available() { return false; }
}  // namespace metal
namespace cu {
inline bool is_available() { return false; }
}  // namespace cu

}  // namespace kiln
