// CustomKernel: a user-written GPU kernel (Metal or CUDA source). kiln reads and writes the node
// exactly and can build one, but cannot run GPU source on the CPU: evaluation throws, naming the kernel
// (src/backend/cpu/kernels/misc/custom.cpp). The row and the builders are here.
#include <stdexcept>

#include "kiln/fast.h"
#include "primitives/common.h"

namespace kiln {

namespace primitives {
// Called from register_misc (misc.cpp).
void register_custom() {
  // No output rule: the outputs come from the record (or the builder).
  registry::define(detail::row("CustomKernel", {0, -1},
                               {{"name", FieldType::String},
                                {"source", FieldType::String},
                                {"grid_x", FieldType::Int},
                                {"grid_y", FieldType::Int},
                                {"grid_z", FieldType::Int},
                                {"threadgroup_x", FieldType::Int},
                                {"threadgroup_y", FieldType::Int},
                                {"threadgroup_z", FieldType::Int},
                                {"shape_infos", FieldType::BoolTripleVec},
                                {"ensure_row_contiguous", FieldType::Bool},
                                {"init_value", FieldType::OptFloat},
                                {"scalar_arguments", FieldType::ScalarVec},
                                {"is_precompiled", FieldType::Bool},
                                {"shared_memory", FieldType::Int}},
                               nullptr, {.num_outputs = -1, .flags = kNoCSE, .shapeless = false}));
}
}  // namespace primitives

namespace fast {

namespace detail {

std::vector<array> custom_kernel(const CustomKernelSpec& spec, const std::vector<array>& inputs,
                                 const std::vector<Shape>& output_shapes, const std::vector<Dtype>& output_dtypes,
                                 StreamOrDevice s) {
  if (output_shapes.size() != output_dtypes.size()) {
    throw std::invalid_argument("[custom_kernel] Expected one dtype per output shape but got " +
                                std::to_string(output_shapes.size()) + " shapes and " +
                                std::to_string(output_dtypes.size()) + " dtypes.");
  }
  if (output_shapes.empty()) {
    throw std::invalid_argument("[custom_kernel] A custom kernel needs at least one output.");
  }
  std::vector<ArraySpec> specs;
  for (size_t i = 0; i < output_shapes.size(); ++i) {
    shape_size(output_shapes[i], "custom_kernel");  // rejects negative dimensions
    specs.push_back({output_shapes[i], output_dtypes[i]});
  }
  std::vector<std::array<bool, 3>> infos;
  infos.reserve(spec.shape_infos.size());
  for (auto& [a, b, c] : spec.shape_infos) infos.push_back({a, b, c});
  auto [gx, gy, gz] = spec.grid;
  auto [tx, ty, tz] = spec.threadgroup;
  State st{spec.name, spec.source, gx, gy, gz, tx, ty, tz, std::move(infos), spec.ensure_row_contiguous,
           spec.init_value, spec.scalar_arguments, spec.is_precompiled, spec.shared_memory};
  static const PrimitiveDef& d = kiln::detail::def("CustomKernel");
  return make_arrays(d, std::move(st), inputs, std::move(specs), to_stream(s));
}

}  // namespace detail

std::vector<array> precompiled_cuda_kernel(const std::string& name, const std::string& compiled_source,
                                           const std::vector<array>& inputs, const std::vector<Shape>& output_shapes,
                                           const std::vector<Dtype>& output_dtypes,
                                           const std::vector<ScalarArg>& scalars, std::tuple<int, int, int> grid,
                                           std::tuple<int, int, int> threadgroup, int shared_memory,
                                           std::optional<float> init_value, bool ensure_row_contiguous,
                                           StreamOrDevice s) {
  // As MLX records precompiled kernels: the name and source as given, no shape information per input.
  detail::CustomKernelSpec spec;
  spec.name = name;
  spec.source = compiled_source;
  spec.grid = grid;
  spec.threadgroup = threadgroup;
  spec.shape_infos.assign(inputs.size(), {false, false, false});
  spec.ensure_row_contiguous = ensure_row_contiguous;
  spec.init_value = init_value;
  spec.scalar_arguments = scalars;
  spec.is_precompiled = true;
  spec.shared_memory = shared_memory;
  return detail::custom_kernel(spec, inputs, output_shapes, output_dtypes, s);
}

}  // namespace fast

}  // namespace kiln
