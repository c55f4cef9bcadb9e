// Trees of arrays (trees.h).
#include "trees.h"

#include <nanobind/stl/string.h>

namespace kiln::py {

namespace {
void visit_rec(nb::handle tree, const std::function<void(nb::handle)>& visit, int depth) {
  if (depth > 1000) throw std::invalid_argument("[tree] A tree nested more than 1000 levels deep.");
  PyObject* p = tree.ptr();
  if (PyList_Check(p) || PyTuple_Check(p)) {
    for (nb::handle h : nb::borrow<nb::sequence>(tree)) visit_rec(h, visit, depth + 1);
  } else if (PyDict_Check(p)) {
    for (auto [k, v] : nb::borrow<nb::dict>(tree)) visit_rec(v, visit, depth + 1);
  } else {
    visit(tree);
  }
}

nb::object unflatten_rec(nb::handle tree, const std::vector<array>& leaves, size_t& index) {
  PyObject* p = tree.ptr();
  if (PyList_Check(p)) {
    nb::list out;
    for (nb::handle h : nb::borrow<nb::list>(tree)) out.append(unflatten_rec(h, leaves, index));
    return out;
  }
  if (PyTuple_Check(p)) {
    nb::list items;
    for (nb::handle h : nb::borrow<nb::tuple>(tree)) items.append(unflatten_rec(h, leaves, index));
    nb::tuple t = nb::tuple(items);
    // Named tuples keep their type.
    if (!PyTuple_CheckExact(p)) return tree.type()(*t);
    return t;
  }
  if (PyDict_Check(p)) {
    nb::dict out;
    for (auto [k, v] : nb::borrow<nb::dict>(tree)) out[k] = unflatten_rec(v, leaves, index);
    return out;
  }
  if (nb::isinstance<array>(tree)) {
    if (index >= leaves.size()) throw std::invalid_argument("[tree] Fewer arrays than the tree has leaves.");
    return nb::cast(leaves[index++]);
  }
  return nb::borrow(tree);
}
}  // namespace

void tree_visit(nb::handle tree, const std::function<void(nb::handle)>& visit) { visit_rec(tree, visit, 0); }

std::vector<array> tree_flatten(nb::handle tree, bool strict, const char* api) {
  std::vector<array> out;
  tree_visit(tree, [&](nb::handle leaf) {
    if (nb::isinstance<array>(leaf)) {
      out.push_back(nb::cast<array>(leaf));
    } else if (strict) {
      throw std::invalid_argument(std::string("[") + api + "] Expected a tree of arrays (lists, tuples and dicts of "
                                  "arrays), found a leaf of type " + py_type_name(leaf) + ".");
    }
  });
  return out;
}

nb::object tree_unflatten(nb::handle tree, const std::vector<array>& leaves, size_t& index) {
  return unflatten_rec(tree, leaves, index);
}

}  // namespace kiln::py
