// Devices and streams as MLX's Python API shows them. kiln evaluates on the CPU; files and graphs that
// name GPU streams run there too (README). kiln.gpu exists, but an op given it throws ValueError, as
// MLX's does on a machine without a GPU backend.
#include <nanobind/stl/string.h>

#include "bindings.h"
#include "convert.h"

namespace kiln::py {

namespace {
std::string device_repr(const Device& d) {
  return std::string("Device(") + (d.type == Device::cpu ? "cpu" : "gpu") + ", " + std::to_string(d.index) + ")";
}
Device device_of(nb::handle obj, const char* api) {
  if (nb::isinstance<Device>(obj)) return nb::cast<Device>(obj);
  if (nb::isinstance<Device::DeviceType>(obj)) return Device(nb::cast<Device::DeviceType>(obj));
  throw std::invalid_argument(std::string("[") + api + "] Expected a Device or a DeviceType (kiln.cpu), found " +
                              py_type_name(obj) + ".");
}
}  // namespace

void init_devices(nb::module_& m) {
  nb::enum_<Device::DeviceType>(m, "DeviceType")
      .value("cpu", Device::DeviceType::cpu)
      .value("gpu", Device::DeviceType::gpu);
  m.attr("cpu") = Device::DeviceType::cpu;
  m.attr("gpu") = Device::DeviceType::gpu;

  nb::class_<Device>(m, "Device", "A device: kiln.Device(kiln.cpu, 0).")
      .def(nb::init<Device::DeviceType, int>(), "type"_a, "index"_a = 0)
      .def_ro("type", &Device::type)
      .def("__repr__", &device_repr)
      .def("__eq__", [](const Device& a, nb::handle b) {
        if (nb::isinstance<Device::DeviceType>(b)) return a.type == nb::cast<Device::DeviceType>(b);
        return nb::isinstance<Device>(b) && nb::cast<Device>(b) == a;
      })
      .def("__hash__", [](const Device& d) { return static_cast<int64_t>(d.type) * 1024 + d.index; });
  nb::implicitly_convertible<Device::DeviceType, Device>();

  nb::class_<Stream>(m, "Stream", "A stream of a device; kiln runs every stream's work on the CPU in order.")
      .def(nb::new_([](nb::handle device, int index) { return Stream(index, device_of(device, "Stream")); }),
           "device"_a, "index"_a = 0)
      .def_ro("device", &Stream::device)
      .def_ro("index", &Stream::index)
      .def("__repr__", [](const Stream& s) { return "Stream(" + device_repr(s.device) + ", " + std::to_string(s.index) + ")"; })
      .def("__eq__", [](const Stream& a, nb::handle b) { return nb::isinstance<Stream>(b) && nb::cast<Stream>(b) == a; })
      .def("__hash__", [](const Stream& s) { return static_cast<int64_t>(s.device.type) * 1024 + s.index; });

  m.def("default_device", &kiln::default_device, "The default device (the CPU).");
  m.def(
      "set_default_device",
      [](nb::handle device) {
        Device d = device_of(device, "set_default_device");
        if (d.type != Device::cpu) {
          throw std::invalid_argument(
              "[set_default_device] kiln evaluates on the CPU only (a GPU backend is planned); expected kiln.cpu.");
        }
      },
      "device"_a);
  m.def(
      "default_stream", [](nb::handle device) { return kiln::default_stream(device_of(device, "default_stream")); },
      "device"_a);
  m.def(
      "is_available", [](nb::handle device) { return device_of(device, "is_available").type == Device::cpu; },
      "device"_a, "Whether kiln can evaluate on `device` (the CPU only, today).");
  m.def(
      "synchronize", [](nb::handle stream) {},
      "stream"_a = nb::none(),
      "Wait for the work of a stream. kiln's evaluation finishes before eval() returns, so there is "
      "nothing left to wait for.");
}

}  // namespace kiln::py
