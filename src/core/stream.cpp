// The process's streams and defaults (kiln/device.h). One table for the whole process, as MLX's
// scheduler has; index i of the table is the stream with index i.
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/device.h"

namespace kiln {

namespace {

struct StreamTable {
  std::mutex mu;
  std::vector<Stream> streams{Stream{0, Device{Device::cpu, 0}}};
  Stream default_cpu{0, Device{Device::cpu, 0}};
};

StreamTable& table() {
  static StreamTable t;
  return t;
}

std::string device_text(const Device& d) {
  return std::string(d.type == Device::gpu ? "gpu" : "cpu") + ":" + std::to_string(d.index);
}

[[noreturn]] void no_gpu(const char* api) {
  throw std::invalid_argument(std::string("[") + api +
                              "] The GPU is not available: kiln has no GPU backend (nodes recorded on "
                              "GPU streams run on the CPU). Use Device::cpu.");
}

}  // namespace

bool is_available(const Device& d) { return d.type == Device::cpu; }

Device default_device() { return Device{Device::cpu, 0}; }

Stream default_stream(Device d) {
  if (d.type == Device::gpu) no_gpu("default_stream");
  std::lock_guard<std::mutex> lk(table().mu);
  return table().default_cpu;
}

Stream to_stream(StreamOrDevice s) { return to_stream(std::move(s), default_device()); }

Stream to_stream(StreamOrDevice s, Device default_) {
  if (auto* st = std::get_if<Stream>(&s)) return *st;
  Device d = default_;
  if (auto* dev = std::get_if<Device>(&s)) d = *dev;
  // As MLX without a GPU backend: an op given Device::gpu throws (default_stream). A node recorded on a
  // GPU stream (a file written on a Mac, an op given such a Stream) still runs on the CPU.
  return default_stream(d);
}

void set_default_device(const Device& d) {
  if (d.type == Device::gpu) no_gpu("set_default_device");
}

bool stream_exists(const Stream& s) {
  auto& t = table();
  std::lock_guard<std::mutex> lk(t.mu);
  return s.index >= 0 && static_cast<size_t>(s.index) < t.streams.size() && t.streams[s.index] == s;
}

void set_default_stream(Stream s) {
  if (s.device.type == Device::gpu) no_gpu("set_default_stream");
  if (!stream_exists(s)) {
    std::ostringstream os;
    os << "[set_default_stream] " << s << " is not a stream of this process (make one with new_stream).";
    throw std::invalid_argument(os.str());
  }
  std::lock_guard<std::mutex> lk(table().mu);
  table().default_cpu = s;
}

Stream new_stream(Device d) {
  if (d.type == Device::gpu) no_gpu("new_stream");
  auto& t = table();
  std::lock_guard<std::mutex> lk(t.mu);
  Stream s{static_cast<int>(t.streams.size()), d};
  t.streams.push_back(s);
  return s;
}

Stream get_stream(int index) {
  auto& t = table();
  std::lock_guard<std::mutex> lk(t.mu);
  if (index < 0 || static_cast<size_t>(index) >= t.streams.size()) {
    throw std::out_of_range("[get_stream] No stream with index " + std::to_string(index) + " (this process has " +
                            std::to_string(t.streams.size()) + ").");
  }
  return t.streams[index];
}

void synchronize() {}

void synchronize(Stream s) {
  if (!stream_exists(s)) {
    std::ostringstream os;
    os << "[synchronize] " << s << " is not a stream of this process.";
    throw std::invalid_argument(os.str());
  }
}

StreamContext::StreamContext(StreamOrDevice s) : previous_(default_stream(default_device())) {
  if (std::holds_alternative<std::monostate>(s)) {
    throw std::invalid_argument("[StreamContext] Expected a stream or a device, found neither.");
  }
  Stream st = to_stream(s);
  set_default_device(st.device);
  set_default_stream(st);
}

StreamContext::~StreamContext() {
  std::lock_guard<std::mutex> lk(table().mu);
  table().default_cpu = previous_;
}

std::ostream& operator<<(std::ostream& os, const Device& d) {
  return os << "Device(" << (d.type == Device::gpu ? "gpu" : "cpu") << ", " << d.index << ")";
}

std::ostream& operator<<(std::ostream& os, const Stream& s) {
  return os << "Stream(" << device_text(s.device) << ", " << s.index << ")";
}

}  // namespace kiln
