// The function transforms' C++ side for Python: flat forms of kiln's vjp, jvp, value_and_grad, vmap,
// checkpoint, custom_function and compile, over Python functions that take a list of arrays and return a
// list of arrays. python/kiln/_transforms.py builds MLX's Python API on them (trees of arrays, argnums
// and argnames, in_axes / out_axes, decorators).
//
// The GIL: the transforms call the Python function while tracing it, on the calling thread, with the
// GIL held; the wrapped functions take it again (a no-op then) so they are also safe where kiln calls
// them later (a compiled function's retrace). Python objects that C++ keeps (in std::function) are held
// through PyRef, whose last owner takes the GIL to release them.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "convert.h"
#include "export_util.h"

namespace kiln::py {

namespace {

using VecFn = std::function<std::vector<array>(const std::vector<array>&)>;

nb::list to_list(const std::vector<array>& xs) {
  nb::list l;
  for (auto& x : xs) l.append(nb::cast(x));
  return l;
}

// A Python result that must be a list or tuple of arrays (the Python layer flattens trees first).
std::vector<array> array_list(nb::handle r, const char* api, const char* what) {
  if (!nb::isinstance<nb::list>(r) && !nb::isinstance<nb::tuple>(r)) {
    throw std::invalid_argument(std::string(api) + " Expected " + what + " as a list of arrays, found " +
                                nb::cast<std::string>(nb::type_name(r.type())) + ".");
  }
  std::vector<array> out;
  for (nb::handle h : nb::borrow<nb::sequence>(r)) {
    if (!nb::isinstance<array>(h)) {
      throw std::invalid_argument(std::string(api) + " Expected " + what + " to hold only arrays, found " +
                                  nb::cast<std::string>(nb::type_name(h.type())) + ".");
    }
    out.push_back(nb::cast<array>(h));
  }
  return out;
}

// `f(list of arrays) -> list of arrays` as a C++ function.
VecFn wrap(nb::handle f, const char* api) {
  auto ref = std::make_shared<PyRef>(f);
  return [ref, api](const std::vector<array>& xs) {
    nb::gil_scoped_acquire gil;
    nb::object r = ref->obj(to_list(xs));
    return array_list(r, api, "the function's outputs");
  };
}

}  // namespace

void init_transforms(nb::module_& m) {
  m.def(
      "_vjp",
      [](nb::callable f, const std::vector<array>& primals, const std::vector<array>& cotangents) {
        auto [outs, vjps] = kiln::vjp(wrap(f, "[vjp]"), primals, cotangents);
        return nb::make_tuple(to_list(outs), to_list(vjps));
      },
      "fun"_a, "primals"_a, "cotangents"_a, "vjp over a function of a list of arrays (kiln._transforms uses it).");
  m.def(
      "_jvp",
      [](nb::callable f, const std::vector<array>& primals, const std::vector<array>& tangents) {
        auto [outs, jvps] = kiln::jvp(wrap(f, "[jvp]"), primals, tangents);
        return nb::make_tuple(to_list(outs), to_list(jvps));
      },
      "fun"_a, "primals"_a, "tangents"_a, "jvp over a function of a list of arrays (kiln._transforms uses it).");
  m.def(
      "_value_and_grad",
      [](nb::callable f, const std::vector<array>& inputs, const std::vector<int>& argnums, const std::string& api) {
        auto [values, grads] = kiln::value_and_grad(wrap(f, api.c_str()), argnums)(inputs);
        return nb::make_tuple(to_list(values), to_list(grads));
      },
      "fun"_a, "inputs"_a, "argnums"_a, "api"_a,
      "value_and_grad over a function of a list of arrays: the gradient of its first output with respect to "
      "the inputs at argnums (kiln._transforms uses it).");
  m.def(
      "_vmap",
      [](nb::callable f, const std::vector<array>& inputs, const std::vector<int>& in_axes,
         const std::vector<int>& out_axes) { return to_list(kiln::vmap(wrap(f, "[vmap]"), in_axes, out_axes)(inputs)); },
      "fun"_a, "inputs"_a, "in_axes"_a, "out_axes"_a,
      "vmap over a function of a list of arrays, called at once on `inputs` (-1: not mapped).");
  m.def(
      "_checkpoint",
      [](nb::callable f, const std::vector<array>& inputs) {
        return to_list(kiln::checkpoint(wrap(f, "[checkpoint]"))(inputs));
      },
      "fun"_a, "inputs"_a, "checkpoint over a function of a list of arrays, called at once on `inputs`.");
  m.def(
      "_custom_function",
      [](nb::callable f, nb::object vjp, nb::object jvp, nb::object vmap, const std::vector<array>& inputs) {
        using VjpFn = std::function<std::vector<array>(const std::vector<array>&, const std::vector<array>&,
                                                       const std::vector<array>&)>;
        using JvpFn = std::function<std::vector<array>(const std::vector<array>&, const std::vector<array>&,
                                                       const std::vector<int>&)>;
        using VmapFn = std::function<std::pair<std::vector<array>, std::vector<int>>(const std::vector<array>&,
                                                                                     const std::vector<int>&)>;
        std::optional<VjpFn> fv;
        std::optional<JvpFn> fj;
        std::optional<VmapFn> fm;
        if (!vjp.is_none()) {
          auto ref = std::make_shared<PyRef>(vjp);
          fv = [ref](const std::vector<array>& primals, const std::vector<array>& cotangents,
                     const std::vector<array>& outputs) {
            nb::gil_scoped_acquire gil;
            return array_list(ref->obj(to_list(primals), to_list(cotangents), to_list(outputs)), "[custom_function]",
                              "the vjp's results");
          };
        }
        if (!jvp.is_none()) {
          auto ref = std::make_shared<PyRef>(jvp);
          fj = [ref](const std::vector<array>& primals, const std::vector<array>& tangents,
                     const std::vector<int>& argnums) {
            nb::gil_scoped_acquire gil;
            return array_list(ref->obj(to_list(primals), to_list(tangents), nb::cast(argnums)), "[custom_function]",
                              "the jvp's results");
          };
        }
        if (!vmap.is_none()) {
          auto ref = std::make_shared<PyRef>(vmap);
          fm = [ref](const std::vector<array>& inputs, const std::vector<int>& axes) {
            nb::gil_scoped_acquire gil;
            nb::object r = ref->obj(to_list(inputs), nb::cast(axes));
            if (!nb::isinstance<nb::tuple>(r) || nb::len(r) != 2) {
              throw std::invalid_argument("[custom_function] The vmap rule must return a tuple (outputs, out_axes).");
            }
            nb::tuple t = nb::borrow<nb::tuple>(r);
            return std::make_pair(array_list(t[0], "[custom_function]", "the vmap rule's outputs"),
                                  nb::cast<std::vector<int>>(t[1]));
          };
        }
        return to_list(kiln::custom_function(wrap(f, "[custom_function]"), fv, fj, fm)(inputs));
      },
      "fun"_a, "vjp"_a.none(), "jvp"_a.none(), "vmap"_a.none(), "inputs"_a,
      "custom_function over a function of a list of arrays, called at once on `inputs`.");
  m.def(
      "_compile",
      [](nb::callable f, bool shapeless) {
        CompiledFn cf = kiln::compile(wrap(f, "[compile]"), shapeless);
        return nb::cpp_function([cf](const std::vector<array>& xs) { return to_list(cf(xs)); });
      },
      "fun"_a, "shapeless"_a,
      "compile over a function of a list of arrays: a callable taking and returning lists of arrays.");
  m.def("disable_compile", &kiln::disable_compile,
        "Make compile return functions that run uncompiled (the traced graphs are not kept).");
  m.def("enable_compile", &kiln::enable_compile, "Undo disable_compile.");
}

}  // namespace kiln::py
