// Shape family, exported graphs: kiln's export callback events for the shape ops must equal the events
// MLX 0.30.1 sends for the same functions (primitive names, states, wiring and names), so files written
// by kiln look like MLX's. The expected text was printed by MLX 0.30.1 through
// `mx.export_function(callback, f, *args)` (Python, same functions; dtype arguments, which MLX's
// callback drops, are skipped here too).
#include <gtest/gtest.h>

#include <charconv>
#include <functional>
#include <sstream>

#include <kiln/export.h>
#include <kiln/kiln.h>

#include "unit/test_util.h"

namespace mx = kiln;

namespace {

using test_util::events;

struct Case {
  const char* name;
  bool shapeless;
  const char* expected;
};

// Printed by MLX 0.30.1 (see the header comment); the kiln functions below mirror the Python ones.
const Case kCases[] = {
  {"views", false, R"(in [A:3x4:float32 B:2x3x4:float32]
out [C:6x2:float32 D:4x2x3:float32 E:1x3x4x1:float32 F:3x4:float32 G:2x12:float32 H:2x3x2x2:float32 I:4x3x2:float32 J:3x4x2:float32 K:2x3x4:float32]
const []
Reshape [[-1,2]] [A:3x4:float32] -> [C:6x2:float32]
Transpose [[2,0,1]] [B:2x3x4:float32] -> [D:4x2x3:float32]
ExpandDims [[0,3]] [A:3x4:float32] -> [E:1x3x4x1:float32]
Slice [[0,0,0],[1,3,4],[1,1,1]] [B:2x3x4:float32] -> [L:1x3x4:float32]
Squeeze [[0]] [L:1x3x4:float32] -> [F:3x4:float32]
Flatten [1,2] [B:2x3x4:float32] -> [G:2x12:float32]
Unflatten [2,[2,2]] [B:2x3x4:float32] -> [H:2x3x2x2:float32]
Transpose [[2,1,0]] [B:2x3x4:float32] -> [I:4x3x2:float32]
Transpose [[1,2,0]] [B:2x3x4:float32] -> [J:3x4x2:float32]
Broadcast [[2,3,4]] [A:3x4:float32] -> [K:2x3x4:float32])"},
  {"slicing", false, R"(in [A:3x4:float32 B:2:int32]
out [C:2x2:float32 D:3x4:float32 E:3x4:float32]
const [F:1:float32 G::int32 H:1:int32]
DynamicSlice [[0,1],[2,2]] [A:3x4:float32 B:2:int32] -> [C:2x2:float32]
Broadcast [[3,1]] [F:1:float32] -> [I:3x1:float32]
Slice [[0],[1],[1]] [B:2:int32] -> [J:1:int32]
DynamicSliceUpdate [[1]] [A:3x4:float32 I:3x1:float32 J:1:int32] -> [D:3x4:float32]
AsType [] [G::int32] -> [K::float32]
Broadcast [[1,4]] [K::float32] -> [L:1x4:float32]
DynamicSliceUpdate [[0]] [A:3x4:float32 L:1x4:float32 H:1:int32] -> [E:3x4:float32])"},
  {"split_concat", false, R"(in [A:3x4:float32]
out [B:3x2:float32 C:3x2:float32 D:3x3:float32 E:3x0:float32 F:3x3:float32 G:6x4:float32 H:3x4x2:float32]
const []
Split [[2],1] [A:3x4:float32] -> [B:3x2:float32 C:3x2:float32]
Slice [[0,0],[3,3],[1,1]] [A:3x4:float32] -> [D:3x3:float32]
Slice [[0,3],[3,1],[1,1]] [A:3x4:float32] -> [E:3x0:float32]
Slice [[0,1],[3,4],[1,1]] [A:3x4:float32] -> [F:3x3:float32]
AsType [] [A:3x4:float32] -> [I:3x4:int32]
AsType [] [I:3x4:int32] -> [J:3x4:float32]
Concatenate [0] [A:3x4:float32 J:3x4:float32] -> [G:6x4:float32]
ExpandDims [[2]] [A:3x4:float32] -> [K:3x4x1:float32]
Concatenate [2] [K:3x4x1:float32 K:3x4x1:float32] -> [H:3x4x2:float32])"},
  {"tile_repeat_roll", false, R"(in [A:3x4:float32]
out [B:2x3x12:float32 C:3x8:float32 D:36:float32 E:3x4:float32 F:3x4:float32 G:3x4:float32]
const []
Reshape [[1,1,3,1,4]] [A:3x4:float32] -> [H:1x1x3x1x4:float32]
Broadcast [[2,1,3,3,4]] [H:1x1x3x1x4:float32] -> [I:2x1x3x3x4:float32]
Reshape [[2,3,12]] [I:2x1x3x3x4:float32] -> [B:2x3x12:float32]
ExpandDims [[2]] [A:3x4:float32] -> [J:3x4x1:float32]
Broadcast [[3,4,2]] [J:3x4x1:float32] -> [K:3x4x2:float32]
Reshape [[3,8]] [K:3x4x2:float32] -> [C:3x8:float32]
Flatten [0,1] [A:3x4:float32] -> [L:12:float32]
ExpandDims [[1]] [L:12:float32] -> [M:12x1:float32]
Broadcast [[12,3]] [M:12x1:float32] -> [N:12x3:float32]
Reshape [[36]] [N:12x3:float32] -> [D:36:float32]
Split [[7],0] [L:12:float32] -> [O:7:float32 P:5:float32]
Concatenate [0] [P:5:float32 O:7:float32] -> [Q:12:float32]
Reshape [[3,4]] [Q:12:float32] -> [E:3x4:float32]
Split [[2],0] [A:3x4:float32] -> [R:2x4:float32 S:1x4:float32]
Concatenate [0] [S:1x4:float32 R:2x4:float32] -> [T:3x4:float32]
Split [[2],1] [T:3x4:float32] -> [U:3x2:float32 V:3x2:float32]
Concatenate [1] [V:3x2:float32 U:3x2:float32] -> [F:3x4:float32]
Slice [[0,4],[3,4],[1,1]] [A:3x4:float32] -> [W:3x0:float32]
Concatenate [1] [W:3x0:float32 A:3x4:float32] -> [G:3x4:float32])"},
  {"pad", false, R"(in [A:3x4:float32]
out [B:6x5:float32 C:6x5:float32]
const [D::int32 E::float32]
AsType [] [D::int32] -> [F::float32]
Pad [[0,1],[1,0],[2,1]] [A:3x4:float32 F::float32] -> [B:6x5:float32]
Broadcast [[6,5]] [E::float32] -> [G:6x5:float32]
Full [] [G:6x5:float32] -> [H:6x5:float32]
SliceUpdate [[1,0],[4,4],[1,1]] [H:6x5:float32 A:3x4:float32] -> [I:6x5:float32]
Slice [[1,0],[2,5],[1,1]] [I:6x5:float32] -> [J:1x5:float32]
SliceUpdate [[0,0],[1,5],[1,1]] [I:6x5:float32 J:1x5:float32] -> [K:6x5:float32]
Slice [[3,0],[-2,5],[1,1]] [K:6x5:float32] -> [L:1x5:float32]
Broadcast [[2,5]] [L:1x5:float32] -> [M:2x5:float32]
SliceUpdate [[4,0],[6,5],[1,1]] [K:6x5:float32 M:2x5:float32] -> [N:6x5:float32]
Slice [[0,3],[6,-1],[1,1]] [N:6x5:float32] -> [O:6x1:float32]
SliceUpdate [[0,4],[6,5],[1,1]] [N:6x5:float32 O:6x1:float32] -> [C:6x5:float32])"},
  {"creation", false, R"(in [A:3x4:float32]
out [B:3x4:float32 C:3x4:float32 D:3x4:float32 E:3x4:float32 F:3x4:float32 G:3x4:float32 H:3x4:int32 I:3x4:float32 J:3:int32]
const [K::float32 L::float32 M:4:int32 N::float32]
Arange [0.0,3.0,1.0] [] -> [O:3:int32]
ExpandDims [[1]] [O:3:int32] -> [P:3x1:int32]
Broadcast [[3,4]] [P:3x1:int32] -> [Q:3x4:int32]
Arange [0.0,4.0,1.0] [] -> [R:4:int32]
ExpandDims [[0]] [R:4:int32] -> [S:1x4:int32]
Broadcast [[3,4]] [S:1x4:int32] -> [T:3x4:int32]
GreaterEqual [] [Q:3x4:int32 T:3x4:int32] -> [U:3x4:bool]
Broadcast [[3,4]] [K::float32] -> [V:3x4:float32]
Select [] [U:3x4:bool A:3x4:float32 V:3x4:float32] -> [B:3x4:float32]
Arange [0.0,3.0,1.0] [] -> [W:3:int32]
ExpandDims [[1]] [W:3:int32] -> [X:3x1:int32]
Broadcast [[3,4]] [X:3x1:int32] -> [Y:3x4:int32]
Arange [0.0,4.0,1.0] [] -> [Z:4:int32]
ExpandDims [[0]] [Z:4:int32] -> [AA:1x4:int32]
Broadcast [[3,4]] [AA:1x4:int32] -> [AB:3x4:int32]
GreaterEqual [] [Y:3x4:int32 AB:3x4:int32] -> [AC:3x4:bool]
Select [] [AC:3x4:bool V:3x4:float32 A:3x4:float32] -> [C:3x4:float32]
Arange [0.0,3.0,1.0] [] -> [AD:3:int32]
ExpandDims [[1]] [AD:3:int32] -> [AE:3x1:int32]
Broadcast [[3,4]] [AE:3x1:int32] -> [AF:3x4:int32]
Arange [-1.0,3.0,1.0] [] -> [AG:4:int32]
ExpandDims [[0]] [AG:4:int32] -> [AH:1x4:int32]
Broadcast [[3,4]] [AH:1x4:int32] -> [AI:3x4:int32]
GreaterEqual [] [AF:3x4:int32 AI:3x4:int32] -> [AJ:3x4:bool]
AsType [] [AJ:3x4:bool] -> [AK:3x4:float32]
Add [] [A:3x4:float32 AK:3x4:float32] -> [D:3x4:float32]
Full [] [V:3x4:float32] -> [AL:3x4:float32]
Arange [0.0,3.0,1.0] [] -> [AM:3:int32]
Arange [1.0,4.0,1.0] [] -> [AN:3:int32]
Broadcast [[3,1,1]] [L::float32] -> [AO:3x1x1:float32]
Full [] [AO:3x1x1:float32] -> [AP:3x1x1:float32]
Scatter [4,[0,1]] [AL:3x4:float32 AM:3:int32 AN:3:int32 AP:3x1x1:float32] -> [AQ:3x4:float32]
Add [] [A:3x4:float32 AQ:3x4:float32] -> [E:3x4:float32]
Full [] [V:3x4:float32] -> [F:3x4:float32]
Broadcast [[3,4]] [L::float32] -> [AR:3x4:float32]
Full [] [AR:3x4:float32] -> [G:3x4:float32]
Broadcast [[3,4]] [M:4:int32] -> [AS:3x4:int32]
Full [] [AS:3x4:int32] -> [H:3x4:int32]
Broadcast [[4]] [L::float32] -> [AT:4:float32]
Arange [0.0,4.0,1.0] [] -> [AU:4:float32]
Broadcast [[4]] [N::float32] -> [AV:4:float32]
Divide [] [AU:4:float32 AV:4:float32] -> [AW:4:float32]
Subtract [] [AT:4:float32 AW:4:float32] -> [AX:4:float32]
Broadcast [[4]] [K::float32] -> [AY:4:float32]
Multiply [] [AX:4:float32 AY:4:float32] -> [AZ:4:float32]
Multiply [] [AW:4:float32 AT:4:float32] -> [BA:4:float32]
Add [] [AZ:4:float32 BA:4:float32] -> [BB:4:float32]
Broadcast [[3,4]] [BB:4:float32] -> [BC:3x4:float32]
Add [] [A:3x4:float32 BC:3x4:float32] -> [I:3x4:float32]
Arange [2.0,10.0,3.0] [] -> [J:3:int32])"},
  {"strided", false, R"(in [A:2x3x4:float32]
out [B:2x2:float32 C:1x4x1:float32 D:1x1:float32]
const []
Transpose [[2,1,0]] [A:2x3x4:float32] -> [E:4x3x2:float32]
Flatten [0,2] [E:4x3x2:float32] -> [F:24:float32]
AsStrided [[2,2],[1,2],3] [F:24:float32] -> [B:2x2:float32]
Slice [[0,0,0],[1,1,4],[1,1,1]] [A:2x3x4:float32] -> [G:1x1x4:float32]
Squeeze [[0,1]] [G:1x1x4:float32] -> [H:4:float32]
Reshape [[1,4,1]] [H:4:float32] -> [C:1x4x1:float32]
Slice [[0,0,0],[1,1,1],[1,1,1]] [A:2x3x4:float32] -> [I:1x1x1:float32]
Squeeze [[0,1,2]] [I:1x1x1:float32] -> [J::float32]
Reshape [[1,1]] [J::float32] -> [D:1x1:float32])"},
  {"shapeless", true, R"(in [A:3x4:float32 B:2x3x4:float32]
out [C:2x3x4:float32 D:2x3x4:float32 E:2x3x4:float32 F:3x4:float32]
const [G::float32 H::float32]
Slice [[0,0,0],[2,3,1],[1,1,1]] [B:2x3x4:float32] -> [I:2x3x1:float32]
Broadcast [[2,3,4]] [A:3x4:float32 I:2x3x1:float32 G::float32] -> [C:2x3x4:float32]
Broadcast [[2,3,4]] [I:2x3x1:float32 A:3x4:float32 G::float32] -> [D:2x3x4:float32]
Broadcast [[2,3,4]] [G::float32 A:3x4:float32 I:2x3x1:float32] -> [E:2x3x4:float32]
Broadcast [[3,4]] [H::float32 A:3x4:float32] -> [J:3x4:float32]
Full [] [J:3x4:float32] -> [F:3x4:float32])"},
  {"meshgrid", false, R"(in [A:2:int32]
out [B:1x2:int32]
const []
Reshape [[1,2]] [A:2:int32] -> [B:1x2:int32])"},
};

const char* expected(const std::string& name) {
  for (auto& c : kCases) {
    if (name == c.name) return c.expected;
  }
  return "";
}

mx::array sl(const mx::array& a, mx::Shape start, mx::Shape stop) { return mx::slice(a, start, stop); }

}  // namespace

TEST(ShapeExport, ViewsLikeMlx) {
  auto f = [](const mx::Args& a) -> std::vector<mx::array> {
    auto &x = a[0], &y = a[1];
    return {mx::reshape(x, {-1, 2}),
            mx::transpose(y, {2, 0, 1}),
            mx::expand_dims(x, {0, -1}),
            mx::squeeze(sl(y, {0, 0, 0}, {1, 3, 4}), 0),
            mx::flatten(y, 1, 2),
            mx::unflatten(y, 2, {2, -1}),
            mx::swapaxes(y, 0, 2),
            mx::moveaxis(y, 0, -1),
            mx::broadcast_to(x, {2, 3, 4})};
  };
  EXPECT_EQ(events(f, {mx::zeros({3, 4}), mx::zeros({2, 3, 4})}, false), expected("views"));
}

TEST(ShapeExport, SlicingLikeMlx) {
  auto f = [](const mx::Args& a) -> std::vector<mx::array> {
    auto &x = a[0], &i = a[1];
    return {mx::slice(x, i, {0, 1}, {2, 2}), mx::slice_update(x, mx::array({1.0f}), sl(i, {0}, {1}), {1}),
            mx::slice_update(x, mx::array(2), mx::array({1}), {0})};
  };
  EXPECT_EQ(events(f, {mx::zeros({3, 4}), mx::array({1, 2})}, false), expected("slicing"));
}

TEST(ShapeExport, SplitConcatenateStackLikeMlx) {
  auto f = [](const mx::Args& a) -> std::vector<mx::array> {
    auto& x = a[0];
    auto p = mx::split(x, 2, 1);
    auto q = mx::split(x, mx::Shape{3, 1}, 1);
    return {p[0], p[1], q[0], q[1], q[2], mx::concatenate({x, mx::astype(x, mx::int32)}, 0), mx::stack({x, x}, -1)};
  };
  EXPECT_EQ(events(f, {mx::zeros({3, 4})}, false), expected("split_concat"));
}

TEST(ShapeExport, TileRepeatRollLikeMlx) {
  auto f = [](const mx::Args& a) -> std::vector<mx::array> {
    auto& x = a[0];
    return {mx::tile(x, {2, 1, 3}), mx::repeat(x, 2, 1),
            mx::repeat(x, 3),       mx::roll(x, 5),
            mx::roll(x, mx::Shape{1, 2}, std::vector<int>{0, 1}), mx::roll(x, 4, 1)};
  };
  EXPECT_EQ(events(f, {mx::zeros({3, 4})}, false), expected("tile_repeat_roll"));
}

TEST(ShapeExport, PadLikeMlx) {
  auto f = [](const mx::Args& a) -> std::vector<mx::array> {
    auto& x = a[0];
    return {mx::pad(x, {{1, 2}, {0, 1}}), mx::pad(x, {{1, 2}, {0, 1}}, mx::array(0), "edge")};
  };
  EXPECT_EQ(events(f, {mx::zeros({3, 4})}, false), expected("pad"));
}

TEST(ShapeExport, CreationLikeMlx) {
  auto f = [](const mx::Args& a) -> std::vector<mx::array> {
    auto& x = a[0];
    return {mx::tril(x),
            mx::triu(x, 1),
            x + mx::tri(3, 4, 1, mx::float32),
            x + mx::eye(3, 4, 1),
            mx::zeros_like(x),
            mx::ones_like(x),
            mx::full({3, 4}, mx::array({1, 2, 3, 4})),
            x + mx::linspace(0, 1, 4),
            mx::arange(2, 10, 3)};
  };
  EXPECT_EQ(events(f, {mx::zeros({3, 4})}, false), expected("creation"));
}

TEST(ShapeExport, StridedAndAtleastLikeMlx) {
  auto f = [](const mx::Args& a) -> std::vector<mx::array> {
    auto& y = a[0];
    return {mx::as_strided(mx::transpose(y), {2, 2}, {1, 2}, 3),
            mx::atleast_3d(mx::squeeze(sl(y, {0, 0, 0}, {1, 1, 4}), {0, 1})),
            mx::atleast_2d(mx::squeeze(sl(y, {0, 0, 0}, {1, 1, 1}), {0, 1, 2}))};
  };
  EXPECT_EQ(events(f, {mx::zeros({2, 3, 4})}, false), expected("strided"));
}

TEST(ShapeExport, ShapelessBroadcastsLikeMlx) {
  auto f = [](const mx::Args& a) -> std::vector<mx::array> {
    auto &x = a[0], &y = a[1];
    auto b = mx::broadcast_arrays({x, sl(y, {0, 0, 0}, {2, 3, 1}), mx::array(1.0f)});
    return {b[0], b[1], b[2], mx::zeros_like(x)};
  };
  EXPECT_EQ(events(f, {mx::zeros({3, 4}), mx::zeros({2, 3, 4})}, true), expected("shapeless"));
}

TEST(ShapeExport, MeshgridLikeMlx) {
  auto f = [](const mx::Args& a) -> std::vector<mx::array> {
    auto& i = a[0];
    return {mx::meshgrid({i, sl(i, {0}, {1}) + 0})[0]};
  };
  EXPECT_EQ(events(f, {mx::array({1, 2})}, false), expected("meshgrid"));
}
