// Hostile files (issue 6): hand-built malicious .mlxfn files must fail with kiln's error and a message
// that says what is wrong — never a crash, a hang or an unbounded allocation — and the import limits
// (ImportOptions) bound what a well-formed file may ask for.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

#include "format/validate.h"
#include "hostile_util.h"
#include "kiln/kiln.h"

namespace mx = kiln;
using namespace kiln_test;
using ::testing::HasSubstr;
using ::testing::StartsWith;

namespace {

const mx::ArraySpec kVec3{{3}, mx::float32};

// x (id 1) -> Abs (id 2): the smallest valid file, patched by the tests.
FileBuilder abs_file() {
  FileBuilder b;
  b.record({{1, kVec3}}, {2}, 2).input_ref(1).node(2, "Abs", {1}, kVec3);
  return b;
}

std::vector<float> floats(mx::array a) { return values<float>(a); }

}  // namespace

TEST(HostileFile, SmallestValidFileRuns) {
  auto f = import_bytes(abs_file().bytes());
  auto out = f({mx::array({-1.0f, 2.0f, -3.0f})});
  EXPECT_EQ(floats(out[0]), (std::vector<float>{1, 2, 3}));
}

TEST(HostileFile, HugeCountsFailBeforeAllocating) {
  auto huge = [](auto write) {
    FileBuilder b;
    write(b.w);
    for (int i = 0; i < 8; ++i) b.w.u64(0);  // enough bytes for the header's record-size check
    return import_error(b.bytes());
  };
  // Keyword names, input ids, a string length, each a count far beyond the file.
  EXPECT_THAT(huge([](auto& w) { w.u64(uint64_t(1) << 60); }), HasSubstr("Invalid count for keyword names"));
  EXPECT_THAT(huge([](auto& w) {
                w.u64(1);
                w.u64(~uint64_t(0));
              }),
              HasSubstr("Invalid count for a keyword name"));
  EXPECT_THAT(huge([](auto& w) {
                w.u64(0);
                w.u64(uint64_t(1) << 61);
              }),
              HasSubstr("Invalid count for input ids"));
  // The tape length.
  FileBuilder t;
  t.record({}, {}, uint64_t(1) << 40);
  EXPECT_THAT(import_error(t.bytes()), HasSubstr("Invalid count for tape entries"));
  // The function count in the header.
  mx::format::ByteWriter h;
  mx::format::write_header(h, mx::format::kV0_30_1, 1 << 30, false);
  EXPECT_THAT(import_error(h.flatten()), HasSubstr("declares 1073741824 functions"));
  // A state vector (Broadcast's shape) with 2^62 entries.
  FileBuilder s;
  s.record({{1, kVec3}}, {2}, 2).input_ref(1);
  s.w.u64(2);
  s.w.boolean(true);
  mx::format::write_ids(s.w, {1});
  mx::format::write_stream(s.w, {0, 0, 0});
  s.w.str("Broadcast");
  s.w.u64(uint64_t(1) << 62);
  EXPECT_THAT(import_error(s.bytes()), HasSubstr("Invalid count for field 'shape' of Broadcast"));
  // n_siblings absurd: the output id list is then counted against the file.
  FileBuilder m;
  m.record({{1, kVec3}}, {2}, 2).input_ref(1);
  m.w.u64(2);
  m.w.boolean(true);
  mx::format::write_ids(m.w, {1});
  mx::format::write_stream(m.w, {0, 0, 0});
  m.w.str("Abs");
  m.w.u64(~uint64_t(0));
  m.w.u64(uint64_t(1) << 58);
  EXPECT_THAT(import_error(m.bytes()), HasSubstr("Invalid count for sibling output ids"));
}

TEST(HostileFile, TooManyDimensions) {
  FileBuilder b;
  b.record({{1, {mx::Shape(65, 1), mx::float32}}}, {1}, 0);
  EXPECT_THAT(import_error(b.bytes()), HasSubstr("expected at most 64 dimensions but found 65"));
  FileBuilder ok;
  ok.record({{1, {mx::Shape(64, 1), mx::float32}}}, {1}, 0);
  EXPECT_EQ(import_error(ok.bytes()), "");
}

TEST(HostileFile, BadIdsCyclesAndForwardReferences) {
  // A node that reads its own id (a cycle) and one that reads a later entry.
  FileBuilder self;
  self.record({{1, kVec3}}, {2}, 2).input_ref(1).node(2, "Abs", {2}, kVec3);
  EXPECT_THAT(import_error(self.bytes()), HasSubstr("input id 2 is not defined by an earlier entry"));
  FileBuilder fwd;
  fwd.record({{1, kVec3}}, {3}, 3).input_ref(1).node(2, "Abs", {3}, kVec3).node(3, "Abs", {1}, kVec3);
  EXPECT_THAT(import_error(fwd.bytes()), HasSubstr("input id 3 is not defined by an earlier entry"));
  // An output id that nothing defines, and an id defined twice.
  FileBuilder out;
  out.record({{1, kVec3}}, {7}, 2).input_ref(1).node(2, "Abs", {1}, kVec3);
  EXPECT_THAT(import_error(out.bytes()), HasSubstr("output id 7 is not defined"));
  FileBuilder twice;
  twice.record({{1, kVec3}}, {2}, 3).input_ref(1).node(2, "Abs", {1}, kVec3).node(2, "Abs", {1}, kVec3);
  EXPECT_THAT(import_error(twice.bytes()), HasSubstr("output id 2 of Abs is already defined"));
  // A node whose id collides with an input id.
  FileBuilder shadow;
  shadow.record({{1, kVec3}}, {1}, 2).input_ref(1).node(1, "Abs", {1}, kVec3);
  EXPECT_THAT(import_error(shadow.bytes()), HasSubstr("already defined"));
  // Duplicate input ids, and an input reference to something that is not an input.
  FileBuilder dup;
  dup.record({{1, kVec3}, {1, kVec3}}, {1}, 0);
  EXPECT_THAT(import_error(dup.bytes()), HasSubstr("input id 1 is listed twice"));
  FileBuilder notin;
  notin.record({{1, kVec3}}, {1}, 1).input_ref(5);
  EXPECT_THAT(import_error(notin.bytes()), HasSubstr("input reference 5 is not one of the record's input ids"));
  // A multi-output entry whose own id is not among its outputs.
  FileBuilder own;
  own.record({{1, kVec3}, {2, kVec3}}, {4}, 3)
      .input_ref(1)
      .input_ref(2)
      .multi_node(3, "DivMod", {1, 2}, {4, 5}, {kVec3, kVec3});
  EXPECT_THAT(import_error(own.bytes()), HasSubstr("the entry id 3 is not among its node's output ids"));
}

TEST(HostileFile, BadCodes) {
  auto with_dtype = [](int32_t code, uint8_t size) {
    FileBuilder b;
    b.w.u64(0);
    b.w.u64(1);
    b.w.u64(1);
    b.w.u64(1);
    mx::format::write_shape(b.w, {3});
    b.w.i32(code);
    b.w.u8(size);
    return import_error(b.bytes());
  };
  EXPECT_THAT(with_dtype(14, 4), HasSubstr("expected a dtype code in 0..13 but found 14"));
  EXPECT_THAT(with_dtype(-1, 4), HasSubstr("expected a dtype code in 0..13 but found -1"));
  EXPECT_THAT(with_dtype(10, 8), HasSubstr("dtype float32 has item size 4 but the file says 8"));
  // Device type 7, and a bool byte of 2 for has_primitive.
  FileBuilder dev;
  dev.record({{1, kVec3}}, {2}, 2).input_ref(1);
  dev.w.u64(2);
  dev.w.boolean(true);
  mx::format::write_ids(dev.w, {1});
  mx::format::write_stream(dev.w, {0, 7, 0});
  EXPECT_THAT(import_error(dev.bytes()), HasSubstr("expected device type 0 (cpu) or 1 (gpu) but found 7"));
  FileBuilder bb;
  bb.record({{1, kVec3}}, {1}, 1);
  bb.w.u64(1);
  bb.w.u8(2);
  bb.w.u64(0);
  EXPECT_THAT(import_error(bb.bytes()), HasSubstr("Expected a bool (0 or 1) for has_primitive"));
  // A negative dimension.
  FileBuilder neg;
  neg.w.u64(0);
  neg.w.u64(1);
  neg.w.u64(1);
  neg.w.u64(1);
  neg.w.u64(1);
  neg.w.i32(-3);
  for (int i = 0; i < 4; ++i) neg.w.u64(0);
  EXPECT_THAT(import_error(neg.bytes()), HasSubstr("expected non-negative dimensions but found -3"));
  // An enum out of range in a state: Reduce type 9.
  FileBuilder red;
  red.record({{1, kVec3}}, {2}, 2).input_ref(1).node(2, "Reduce", {1}, {{}, mx::float32}, [](auto& w) {
    w.i32(9);
    w.u64(1);
    w.i32(0);
  });
  EXPECT_THAT(import_error(red.bytes()), HasSubstr("Reduce"));
  EXPECT_THAT(import_error(red.bytes()), StartsWith("[import_function]"));
  // A variant tag that does not exist (CustomKernel-style scalar args are the only variants; the
  // codec is exercised directly).
  mx::format::ByteWriter v;
  v.u64(1);
  v.i32(3);
  v.i32(0);
  auto vb = v.flatten();
  mx::format::MemorySource vs(vb);
  mx::format::ByteReader vr(vs);
  try {
    mx::format::read_field(vr, {"args", mx::FieldType::ScalarVec}, "CustomKernel");
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("expected 0 (int), 1 (float) or 2 (bool) but found 3"));
  }
}

TEST(HostileFile, UnknownAndInternalPrimitiveNames) {
  FileBuilder unk;
  unk.record({{1, kVec3}}, {2}, 2).input_ref(1).node(2, "Abz", {1}, kVec3);
  EXPECT_EQ(import_error(unk.bytes()), "[import_function] Unable to deserialize primitive Abz");
  // kiln-internal rows (not in MLX's table) cannot be named by a file.
  FileBuilder load;
  load.record({}, {2}, 1).node(2, "Load", {}, kVec3, [](auto& w) { w.u64(0); });
  EXPECT_EQ(import_error(load.bytes()), "[import_function] Unable to deserialize primitive Load");
  // Control characters in a name are not echoed.
  FileBuilder ctl;
  ctl.record({{1, kVec3}}, {2}, 2).input_ref(1).node(2, std::string("A\x1b[2J", 5), {1}, kVec3);
  EXPECT_EQ(import_error(ctl.bytes()), "[import_function] Unable to deserialize primitive A?[2J");
}

TEST(HostileFile, WrongInputCounts) {
  FileBuilder add3;
  add3.record({{1, kVec3}}, {2}, 2).input_ref(1).node(2, "Add", {1, 1, 1}, kVec3);
  EXPECT_THAT(import_error(add3.bytes()), HasSubstr("Add expects 2 inputs but the node has 3"));
  FileBuilder abs0;
  abs0.record({}, {2}, 1).node(2, "Abs", {}, kVec3);
  EXPECT_THAT(import_error(abs0.bytes()), HasSubstr("Abs expects 1 inputs but the node has 0"));
  // Two outputs recorded for a one-output primitive.
  FileBuilder two;
  two.record({{1, kVec3}}, {2}, 2).input_ref(1).multi_node(2, "Abs", {1}, {2, 3}, {kVec3, kVec3});
  EXPECT_THAT(import_error(two.bytes()), HasSubstr("Abs has 1 outputs but the node records 2"));
}

TEST(HostileFile, RecordedShapesAndDtypesAreReinferred) {
  FileBuilder shape;
  shape.record({{1, kVec3}}, {2}, 2).input_ref(1).node(2, "Abs", {1}, {{4}, mx::float32});
  EXPECT_THAT(import_error(shape.bytes()), HasSubstr("produces [(3) float32] but the file records [(4) float32]"));
  FileBuilder dtype;
  dtype.record({{1, kVec3}}, {2}, 2).input_ref(1).node(2, "Abs", {1}, {{3}, mx::int64});
  EXPECT_THAT(import_error(dtype.bytes()), HasSubstr("but the file records [(3) int64]"));
  // Add of (3) and (4): the rule itself rejects the inputs.
  FileBuilder bad;
  bad.record({{1, kVec3}, {2, {{4}, mx::float32}}}, {3}, 3).input_ref(1).input_ref(2).node(3, "Add", {1, 2}, kVec3);
  EXPECT_THAT(import_error(bad.bytes()), HasSubstr("Add node is invalid for its inputs"));
  // A huge recorded output that the rule does not produce (Abs of (3) recorded as (2^31-1, 2^31-1)).
  FileBuilder big;
  big.record({{1, kVec3}}, {2}, 2).input_ref(1).node(2, "Abs", {1}, {{2147483647, 2147483647}, mx::float32});
  EXPECT_THAT(import_error(big.bytes()), HasSubstr("but the file records"));
}

TEST(HostileFile, ConstantPayloadLength) {
  // (4) float32 needs 16 bytes; 8 follow.
  FileBuilder shortp;
  shortp.record({}, {5}, 1).constant(5, {{4}, mx::float32}, f32_bytes({1, 2}));
  EXPECT_THAT(import_error(shortp.bytes()), HasSubstr("needs 4 elements of 4 bytes but only 8 bytes remain"));
  // Exactly 16 bytes: loads, and the values are the payload.
  FileBuilder ok;
  ok.record({}, {5}, 1).constant(5, {{4}, mx::float32}, f32_bytes({1, 2, 3, 4}));
  auto f = import_bytes(ok.bytes());
  EXPECT_EQ(floats(f(mx::Args{})[0]), (std::vector<float>{1, 2, 3, 4}));
  // A shape whose element count overflows.
  FileBuilder ovf;
  ovf.record({}, {5}, 1).constant(5, {{2147483647, 2147483647, 2147483647}, mx::float32}, {});
  EXPECT_THAT(import_error(ovf.bytes()), HasSubstr("has too many elements"));
  // A reference to a constant no earlier record defined is read as a new constant: its shape is
  // then missing.
  FileBuilder ref;
  ref.record({}, {5}, 1).constant_ref(5);
  EXPECT_THAT(import_error(ref.bytes()), HasSubstr("Unexpected end of file"));
  // The same constant twice in one record.
  FileBuilder twice;
  twice.record({}, {5}, 2).constant(5, {{1}, mx::float32}, f32_bytes({1})).constant_ref(5);
  EXPECT_THAT(import_error(twice.bytes()), HasSubstr("constant id 5 is already defined in this record"));
}

TEST(HostileFile, BoolConstantBytesAreNormalized) {
  // A bool payload byte other than 0 or 1 would be undefined behaviour in C++; kiln reads it as true.
  FileBuilder b;
  b.record({}, {5}, 1).constant(5, {{3}, mx::bool_}, {0, 1, 0xfe});
  auto f = import_bytes(b.bytes());
  auto out = f(mx::Args{})[0];
  mx::eval(out);
  auto* p = static_cast<const uint8_t*>(out.raw_data());
  EXPECT_EQ((std::vector<int>{p[0], p[1], p[2]}), (std::vector<int>{0, 1, 1}));
  EXPECT_EQ(mx::sum(mx::astype(out, mx::int32)).item<int32_t>(), 2);
}

TEST(HostileFile, DeepChainImportsRunsAndFreesIteratively) {
  // 200000 Abs nodes in a chain: no recursion over the depth anywhere (parse, replay, eval, free).
  // (20000 in sanitizer builds, whose stacks are larger per frame anyway.)
  const uint64_t n = kSanitized ? 20000 : 200000;
  FileBuilder b;
  b.record({{1, kVec3}}, {n + 1}, n + 1).input_ref(1);
  for (uint64_t i = 2; i <= n + 1; ++i) b.node(i, i % 2 ? "Abs" : "Negative", {i - 1}, kVec3);
  auto t0 = std::chrono::steady_clock::now();
  {
    auto f = import_bytes(b.bytes());
    auto out = f({mx::array({-1.0f, 2.0f, -3.0f})});
    EXPECT_EQ(floats(out[0]), (std::vector<float>{1, 2, 3}));
    // An unevaluated deep graph dropped without evaluation.
    auto lazy = f({mx::array({1.0f, 1.0f, 1.0f})});
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30.0);
}

TEST(HostileFile, ManyInputReferencesStayLinear) {
  // 60000 inputs, each referenced on the tape: the lookup is a map, not a scan per reference.
  const uint64_t n = kSanitized ? 20000 : 60000;
  std::vector<std::pair<uint64_t, mx::ArraySpec>> ins;
  for (uint64_t i = 1; i <= n; ++i) ins.push_back({i, {{}, mx::float32}});
  FileBuilder b;
  b.record(ins, {1}, n);
  for (uint64_t i = 1; i <= n; ++i) b.input_ref(i);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(import_error(b.bytes()), "");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
}

TEST(HostileFile, ArrayLimit) {
  // 20 bytes of file that ask for a (65536, 65536) float32 broadcast: 16 GiB.
  FileBuilder b;
  mx::ArraySpec big{{65536, 65536}, mx::float32};
  b.record({{1, {{}, mx::float32}}}, {2}, 2).input_ref(1).node(2, "Broadcast", {1}, big, [](auto& w) {
    mx::format::write_shape(w, {65536, 65536});
  });
  std::string err = import_error(b.bytes());
  EXPECT_THAT(err, StartsWith("[import_function] Function record 0 exceeds a limit: tape entry 1 (Broadcast node 2)"));
  EXPECT_THAT(err, HasSubstr("(65536,65536) float32 that needs 17179869184 bytes, more than the limit of 4294967296 "
                             "bytes (ImportOptions::max_array_bytes)"));
  // Raised limits accept it (nothing is allocated until a call is evaluated).
  mx::ImportOptions o;
  o.max_array_bytes = 0;
  o.max_call_bytes = 0;
  EXPECT_EQ(import_error(b.bytes(), o), "");
  EXPECT_EQ(import_bytes(b.bytes(), o).info().functions[0].peak_bytes, uint64_t(17179869184));
  // A tight limit refuses small arrays too.
  mx::ImportOptions tight;
  tight.max_array_bytes = 8;
  EXPECT_THAT(import_error(abs_file().bytes(), tight), HasSubstr("needs 12 bytes, more than the limit of 8"));
}

TEST(HostileFile, CallMemoryLimit) {
  // A chain of four (1024, 1024) float32 nodes: at most two are alive at once in tape order.
  FileBuilder b;
  mx::ArraySpec m{{1024, 1024}, mx::float32};
  b.record({{1, m}}, {5}, 5).input_ref(1);
  for (uint64_t i = 2; i <= 5; ++i) b.node(i, "Abs", {i - 1}, m);
  auto info = import_bytes(b.bytes()).info();
  EXPECT_EQ(info.functions[0].peak_bytes, uint64_t(8) << 20);
  mx::ImportOptions o;
  o.max_call_bytes = (uint64_t(8) << 20) - 1;
  EXPECT_THAT(import_error(b.bytes(), o),
              HasSubstr("a call needs about 8388608 bytes of working memory, more than the limit of 8388607 bytes "
                        "(ImportOptions::max_call_bytes)"));
  o.max_call_bytes = uint64_t(8) << 20;
  EXPECT_EQ(import_error(b.bytes(), o), "");
}

TEST(HostileFile, ShapelessCallLimitCheckedBeforeRunning) {
  // A shapeless Abs recorded at (3): a call with a (4194304) input needs 16 MiB per node.
  FileBuilder b(1, /*shapeless=*/true);
  b.record({{1, kVec3}}, {2}, 2).input_ref(1).node(2, "Abs", {1}, kVec3);
  mx::ImportOptions o;
  o.max_array_bytes = 1 << 20;
  auto f = import_bytes(b.bytes(), o);
  EXPECT_EQ(floats(f({mx::array({-1.0f, 2.0f, 3.0f})})[0]), (std::vector<float>{1, 2, 3}));
  try {
    f({mx::zeros({4194304})});
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), StartsWith("[import_function::call] For the given input shapes, tape entry 1 (Abs node 2) "
                                     "is an array of (4194304) float32 that needs 16777216 bytes"));
  }
}

TEST(HostileFile, FileOptionsOverload) {
  auto path = ::testing::TempDir() + "/kiln_hostile_opts.mlxfn";
  write_bytes(path, abs_file().bytes());
  mx::ImportOptions tight;
  tight.max_array_bytes = 4;
  EXPECT_THROW(mx::import_function(path, tight), std::invalid_argument);
  EXPECT_NO_THROW(mx::import_function(path));
  std::remove(path.c_str());
}

TEST(HostileFile, OutOfRangeIndicesFromAFile) {
  // Take with constant indices far outside the array: gather wraps negatives and clamps, never
  // reads outside the buffer.
  FileBuilder b;
  mx::ArraySpec idx{{3}, mx::int32};
  std::vector<int32_t> iv = {1000000, -7, 2147483647};
  std::vector<uint8_t> ib(12);
  std::memcpy(ib.data(), iv.data(), 12);
  b.record({{1, kVec3}}, {3}, 3).input_ref(1).constant(2, idx, ib).node(3, "Gather", {1, 2}, {{3, 1}, mx::float32},
                                                                          [](auto& w) {
                                                                            w.u64(1);
                                                                            w.i32(0);
                                                                            mx::format::write_shape(w, {1});
                                                                          });
  auto err = import_error(b.bytes());
  if (err.empty()) {
    auto out = import_bytes(b.bytes())({mx::array({1.0f, 2.0f, 3.0f})})[0];
    auto v = floats(out);
    for (float x : v) EXPECT_TRUE(x == 1.0f || x == 2.0f || x == 3.0f) << x;
  } else {
    EXPECT_THAT(err, StartsWith("[import_function]"));
  }
}

// ---- Fuzz findings (inputs under tests/regress/, replayed by test_regress.cpp) ----

TEST(HostileFuzzFinding, ArgReduceOverAnEmptyArray) {
  // fuzz_node: ArgReduce of a (0) array divided by the axis length in its kernel (UBSan: division
  // by zero). The op builder refused it; a file could record it. Now the shape rule refuses it too.
  FileBuilder b;
  b.record({{1, {{0}, mx::uint64}}}, {2}, 2).input_ref(1).node(2, "ArgReduce", {1}, {{1}, mx::uint32}, [](auto& w) {
    w.i32(1);
    w.i32(0);
  });
  EXPECT_THAT(import_error(b.bytes()), HasSubstr("[argmax] Cannot argmax reduce zero size array."));
  FileBuilder c;
  c.record({{1, {{3, 0}, mx::float32}}}, {2}, 2).input_ref(1).node(2, "ArgReduce", {1}, {{3, 1}, mx::uint32}, [](auto& w) {
    w.i32(0);
    w.i32(1);
  });
  EXPECT_THAT(import_error(c.bytes()), HasSubstr("[argmin] Cannot argmin reduce zero size array."));
}

TEST(HostileFuzzFinding, ArangeWithAHugeNegativeLength) {
  // All three fuzzers: Arange whose (stop - start) / step is a huge negative number (or -inf)
  // converted that double to int before clamping at 0 (UBSan: float-cast-overflow). It is empty.
  auto arange = [](double start, double stop, double step, mx::Shape recorded) {
    FileBuilder b;
    b.record({}, {2}, 1).node(2, "Arange", {}, {recorded, mx::float32}, [=](auto& w) {
      w.f64(start);
      w.f64(stop);
      w.f64(step);
    });
    return b.bytes();
  };
  auto out = import_bytes(arange(0, -1e300, 1, {0}))(mx::Args{})[0];
  mx::eval(out);
  EXPECT_EQ(out.shape(), mx::Shape{0});
  EXPECT_EQ(import_error(arange(0, 1, -1e-300, {0})), "");  // (1 - 0) / -1e-300 = -inf: empty too
  EXPECT_THAT(import_error(arange(0, 1, 1e-300, {0})), HasSubstr("[arange] Maximum size exceeded."));
  EXPECT_THAT(import_error(arange(0, INFINITY, 1, {0})), HasSubstr("[arange] Cannot compute length."));
}
