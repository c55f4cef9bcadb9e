// The .mlxfn codec: byte-exact worked examples (spec 2.9, 2.10), the field encodings, reading every
// golden file written by MLX 0.30.1 (and writing it back byte for byte), and malformed files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "format/codec.h"
#include "format/record.h"
#include "primitives/misc/load.h"
#include "test_export_util.h"

namespace mx = kiln;
using namespace kiln_test;
using ::testing::HasSubstr;

namespace {

// Hex template with {name} tokens replaced by 8-byte little-endian ids.
std::vector<uint8_t> expand(const std::string& tmpl, const std::map<std::string, uint64_t>& ids) {
  std::string hex;
  for (size_t i = 0; i < tmpl.size(); ++i) {
    if (tmpl[i] == '{') {
      size_t j = tmpl.find('}', i);
      uint64_t v = ids.at(tmpl.substr(i + 1, j - i - 1));
      for (int b = 0; b < 8; ++b) {
        char buf[4];
        std::snprintf(buf, sizeof buf, "%02x ", static_cast<unsigned>((v >> (8 * b)) & 0xff));
        hex += buf;
      }
      i = j;
    } else {
      hex += tmpl[i];
    }
  }
  return from_hex(hex);
}

mx::format::ParsedFile parse_bytes(const std::vector<uint8_t>& bytes) {
  auto src = std::make_shared<mx::format::MemorySource>(bytes);
  return mx::format::read_file(*src, [src](const mx::ArraySpec& s, uint64_t off, uint64_t n) {
    return mx::detail::load_constant(src, s, off, n);
  });
}

// Serialize a parsed file again, keeping its ids (the payloads are read through the Load nodes).
std::vector<uint8_t> rewrite(const mx::format::ParsedFile& f) {
  mx::format::ByteWriter w;
  mx::format::FormatVersion v;
  EXPECT_TRUE(mx::format::FormatVersion::parse(f.version, v));
  w.str(f.version);
  w.i32(static_cast<int32_t>(f.records.size()));
  w.boolean(f.shapeless);
  std::unordered_set<uint64_t> written;
  for (auto& r : f.records) {
    std::vector<uint64_t> added;
    mx::format::write_record(w, r, v, written, added);
    written.insert(added.begin(), added.end());
  }
  return w.flatten();
}

}  // namespace

TEST(FormatCodec, WorkedExample1AddScalars) {
  auto path = temp_file("ex1");
  mx::export_function(
      path, [](const mx::Args& a) { return std::vector<mx::array>{mx::add(a[0], a[1])}; },
      {mx::array(1.0f), mx::array(2.0f)});
  // Spec 2.9 with our ids: x = 1, y = 2, out = 3.
  auto expected = expand(
      "06 00 00 00 00 00 00 00 30 2e 33 30 2e 31  01 00 00 00  00"
      "00 00 00 00 00 00 00 00"
      "02 00 00 00 00 00 00 00 {x} {y}"
      "02 00 00 00 00 00 00 00"
      "00 00 00 00 00 00 00 00 0a 00 00 00 04"
      "00 00 00 00 00 00 00 00 0a 00 00 00 04"
      "01 00 00 00 00 00 00 00 {out}"
      "03 00 00 00 00 00 00 00"
      "{x} 00 00  {y} 00 00  {out} 01"
      "02 00 00 00 00 00 00 00 {x} {y}"
      "00 00 00 00 00 00 00 00 00 00 00 00"
      "03 00 00 00 00 00 00 00 41 64 64"
      "00 00 00 00 00 00 00 00"
      "00 00 00 00 00 00 00 00 0a 00 00 00 04",
      {{"x", 1}, {"y", 2}, {"out", 3}});
  auto got = read_bytes(path);
  EXPECT_EQ(got.size(), 206u);
  EXPECT_EQ(to_hex(got), to_hex(expected));
  std::remove(path.c_str());
}

TEST(FormatCodec, WorkedExample2SharedConstantTwoRecords) {
  auto path = temp_file("ex2");
  mx::array c({2.0f, 3.0f});
  {
    auto ex = mx::exporter(path, [c](const mx::Args& a) { return std::vector<mx::array>{mx::multiply(a[0], c)}; });
    ex({mx::array({1.0f, 1.0f})});
    ex({mx::array(1.0f)});
  }
  auto expected = expand(
      "06 00 00 00 00 00 00 00 30 2e 33 30 2e 31  02 00 00 00  00"
      // record 1
      "00 00 00 00 00 00 00 00"
      "01 00 00 00 00 00 00 00 {x1}"
      "01 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00 02 00 00 00 0a 00 00 00 04"
      "01 00 00 00 00 00 00 00 {m1}"
      "03 00 00 00 00 00 00 00"
      "{x1} 00 00"
      "{c} 00 01  01 00 00 00 00 00 00 00 02 00 00 00  0a 00 00 00 04  00 00 00 40 00 00 40 40"
      "{m1} 01  02 00 00 00 00 00 00 00 {x1} {c}  00 00 00 00 00 00 00 00 00 00 00 00"
      "08 00 00 00 00 00 00 00 4d 75 6c 74 69 70 6c 79"
      "00 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00 02 00 00 00 0a 00 00 00 04"
      // record 2
      "00 00 00 00 00 00 00 00"
      "01 00 00 00 00 00 00 00 {x2}"
      "01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 0a 00 00 00 04"
      "01 00 00 00 00 00 00 00 {m2}"
      "04 00 00 00 00 00 00 00"
      "{x2} 00 00"
      "{bx} 01  01 00 00 00 00 00 00 00 {x2}  00 00 00 00 00 00 00 00 00 00 00 00"
      "09 00 00 00 00 00 00 00 42 72 6f 61 64 63 61 73 74"
      "01 00 00 00 00 00 00 00 02 00 00 00"
      "00 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00 02 00 00 00 0a 00 00 00 04"
      "{c} 00 01"
      "{m2} 01  02 00 00 00 00 00 00 00 {bx} {c}  00 00 00 00 00 00 00 00 00 00 00 00"
      "08 00 00 00 00 00 00 00 4d 75 6c 74 69 70 6c 79"
      "00 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00 02 00 00 00 0a 00 00 00 04",
      {{"x1", 1}, {"c", 2}, {"m1", 3}, {"x2", 4}, {"bx", 5}, {"m2", 6}});
  auto got = read_bytes(path);
  EXPECT_EQ(got.size(), 489u);
  EXPECT_EQ(to_hex(got), to_hex(expected));
  std::remove(path.c_str());
}

TEST(FormatCodec, FieldEncodingsRoundTrip) {
  using mx::FieldType;
  struct Case {
    mx::Field field;
    mx::Value value;
    std::string hex;
  };
  std::vector<Case> cases = {
      {{"p", FieldType::Placeholder}, std::monostate{}, ""},
      {{"b", FieldType::Bool}, true, "01"},
      {{"i", FieldType::Int}, int32_t(-2), "fe ff ff ff"},
      {{"s", FieldType::Size}, uint64_t(0x0102030405060708ull), "08 07 06 05 04 03 02 01"},
      {{"f", FieldType::Float}, 1.5f, "00 00 c0 3f"},
      {{"d", FieldType::Double}, -2.0, "00 00 00 00 00 00 00 c0"},
      {{"t", FieldType::DtypeF}, mx::bfloat16, "0c 00 00 00 02"},
      {{"str", FieldType::String}, std::string("L"), "01 00 00 00 00 00 00 00 4c"},
      {{"v", FieldType::IntVec}, std::vector<int32_t>{1, -1}, "02 00 00 00 00 00 00 00 01 00 00 00 ff ff ff ff"},
      {{"sh", FieldType::ShapeF}, std::vector<int32_t>{}, "00 00 00 00 00 00 00 00"},
      {{"st", FieldType::StridesF}, std::vector<int64_t>{-3}, "01 00 00 00 00 00 00 00 fd ff ff ff ff ff ff ff"},
      {{"sv", FieldType::SizeVec}, std::vector<uint64_t>{7}, "01 00 00 00 00 00 00 00 07 00 00 00 00 00 00 00"},
      {{"o", FieldType::OptFloat}, std::optional<float>{}, "00"},
      {{"o2", FieldType::OptFloat}, std::optional<float>{2.0f}, "01 00 00 00 40"},
      {{"bt", FieldType::BoolTripleVec}, std::vector<std::array<bool, 3>>{{true, false, true}},
       "01 00 00 00 00 00 00 00 01 00 01"},
      {{"sc", FieldType::ScalarVec}, std::vector<mx::ScalarArg>{int32_t(3), 0.5f, true},
       "03 00 00 00 00 00 00 00 00 00 00 00 03 00 00 00 01 00 00 00 00 00 00 3f 02 00 00 00 01"},
  };
  for (auto& c : cases) {
    mx::format::ByteWriter w;
    mx::format::write_field(w, c.field, c.value, "Test");
    EXPECT_EQ(to_hex(w.bytes()), to_hex(from_hex(c.hex))) << c.field.name;
    mx::format::MemorySource src(w.bytes());
    mx::format::ByteReader r(src);
    EXPECT_EQ(mx::format::read_field(r, c.field, "Test"), c.value) << c.field.name;
    EXPECT_EQ(r.remaining(), 0u) << c.field.name;
  }
  // A value of the wrong type for its field is an internal error, not silent garbage.
  mx::format::ByteWriter w;
  EXPECT_THROW(mx::format::write_field(w, {"i", FieldType::Int}, 1.0f, "Test"), std::logic_error);
  // A bad variant tag is rejected.
  mx::format::MemorySource bad(from_hex("01 00 00 00 00 00 00 00 07 00 00 00 00 00 00 00"));
  mx::format::ByteReader r(bad);
  try {
    mx::format::read_field(r, {"sc", FieldType::ScalarVec}, "CustomKernel");
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("variant tag"));
  }
}

// The reader's window: small after a jump (a skipped constant payload), doubling while decoding runs on,
// so a file of many constants is not read 64 KiB past each one; values stay right across refills.
TEST(FormatCodec, ReaderWindowStartsSmallAfterASkip) {
  struct Counting : mx::io_detail::RandomSource {
    mx::format::MemorySource inner;
    mutable uint64_t bytes = 0;
    mutable int reads = 0;
    explicit Counting(std::vector<uint8_t> d) : inner(std::move(d)) {}
    uint64_t size() const override { return inner.size(); }
    void read_at(uint64_t off, void* dst, size_t n) const override {
      bytes += n;
      ++reads;
      inner.read_at(off, dst, n);
    }
    const std::string& name() const override { return inner.name(); }
  };
  // 300 records of (u64 payload length, 16 bytes of header, payload of 100 000 bytes).
  mx::format::ByteWriter w;
  for (uint64_t i = 0; i < 300; ++i) {
    w.u64(100000);
    for (int j = 0; j < 4; ++j) w.u32(static_cast<uint32_t>(i * 4 + j));
    std::vector<uint8_t> payload(100000, static_cast<uint8_t>(i));
    w.raw(payload.data(), payload.size());
  }
  Counting src(w.bytes());
  mx::format::ByteReader r(src);
  for (uint64_t i = 0; i < 300; ++i) {
    const uint64_t n = r.u64("length");
    ASSERT_EQ(n, 100000u);
    for (int j = 0; j < 4; ++j) ASSERT_EQ(r.u32("header"), static_cast<uint32_t>(i * 4 + j));
    r.skip(n, "payload");
  }
  EXPECT_EQ(r.remaining(), 0u);
  // 4 KiB per record after its jump: 1.2 MB, where a fixed 64 KiB window read 19.7 MB.
  EXPECT_LE(src.bytes, 300u * 4096u);
  // Sequential decoding reads each byte once, in windows grown to 64 KiB: 1 MiB in 20 reads.
  mx::format::ByteWriter w2;
  for (uint32_t i = 0; i < 262144; ++i) w2.u32(i);
  Counting seq(w2.bytes());
  mx::format::ByteReader r2(seq);
  for (uint32_t i = 0; i < 262144; ++i) ASSERT_EQ(r2.u32("value"), i);
  EXPECT_EQ(seq.bytes, 262144u * 4u);
  EXPECT_LE(seq.reads, 20);
}

TEST(FormatCodec, VersionParsing) {
  mx::format::FormatVersion v;
  ASSERT_TRUE(mx::format::FormatVersion::parse("0.30.1.dev20251201+abc", v));
  EXPECT_EQ(v, (mx::format::FormatVersion{0, 30, 1}));
  EXPECT_FALSE(mx::format::FormatVersion::parse("garbage", v));
  EXPECT_EQ(mx::format::reader_layout("0.30.1"), mx::format::kV0_30_1);
  EXPECT_TRUE(mx::format::header_has_metadata({0, 32, 1}));
  EXPECT_FALSE(mx::format::header_has_metadata(mx::format::kV0_30_1));
}

// Every golden file either parses (and then writes back byte for byte, ids included) or names a
// primitive that no family has registered yet.
TEST(FormatGolden, ParseAndRewriteEveryFile) {
  auto files = golden_files();
  ASSERT_EQ(files.size(), 152u);
  int parsed = 0, rewritten = 0;
  std::map<std::string, int> missing;
  for (auto& path : files) {
    auto bytes = read_bytes(path);
    try {
      auto f = parse_bytes(bytes);
      ++parsed;
      EXPECT_EQ(f.version, "0.30.1") << path;
      EXPECT_GE(f.records.size(), 1u) << path;
      auto again = rewrite(f);
      if (again == bytes) {
        ++rewritten;
      } else {
        ADD_FAILURE() << "rewrite differs for " << path;
      }
    } catch (const std::invalid_argument& e) {
      std::string msg = e.what();
      const std::string tag = "[import_function] Unable to deserialize primitive ";
      if (msg.rfind(tag, 0) == 0) {
        std::string name = msg.substr(tag.size());
        EXPECT_EQ(mx::registry::find(name), nullptr) << path << ": " << msg;
        missing[name]++;
      } else {
        ADD_FAILURE() << path << ": " << msg;
      }
    }
  }
  std::string report;
  for (auto& [n, c] : missing) report += " " + n + "(" + std::to_string(c) + ")";
  std::printf("[golden] %d of %zu files parsed and rewritten byte-identically: %d; unregistered:%s\n", parsed,
              files.size(), rewritten, report.c_str());
  EXPECT_EQ(parsed, rewritten);
}

// The structure MLX wrote for multi-record, keyword and shapeless files.
TEST(FormatGolden, StructureOfApiFiles) {
  auto info = [](const std::string& name) {
    return mx::import_function(golden_dir() + "/" + name + "/" + name + ".mlxfn").info();
  };
  {
    auto f = info("binary_add");
    EXPECT_EQ(f.version, "0.30.1");
    EXPECT_FALSE(f.shapeless);
    ASSERT_EQ(f.functions.size(), 1u);
    auto& r = f.functions[0];
    EXPECT_EQ(r.inputs.size(), 2u);
    EXPECT_EQ(r.tape.size(), 3u);
    EXPECT_EQ(r.tape[0].kind, mx::TapeEntryInfo::Kind::Input);
    EXPECT_EQ(r.tape[1].kind, mx::TapeEntryInfo::Kind::Input);
    EXPECT_EQ(r.tape[2].name, "Add");
    EXPECT_EQ(r.tape[2].stream, (mx::StreamInfo{0, 0, 0}));
    EXPECT_EQ(r.primitive_histogram.at("Add"), 1u);
  }
  {
    auto f = info("args_and_kwargs");
    ASSERT_EQ(f.functions.size(), 1u);
    EXPECT_EQ(f.functions[0].kwarg_keys, std::vector<std::string>{"b"});
    EXPECT_EQ(f.functions[0].num_positional(), 1u);
  }
  {
    auto f = info("multi_trace_shared_constant");
    ASSERT_EQ(f.functions.size(), 4u);
    // One payload in the whole file, referenced by later records without a payload.
    size_t payloads = 0, refs = 0;
    for (auto& r : f.functions) {
      for (auto& t : r.tape) {
        if (t.kind == mx::TapeEntryInfo::Kind::Constant) (t.payload ? payloads : refs)++;
      }
    }
    EXPECT_EQ(payloads, f.constants);
    EXPECT_GE(refs, 1u);
  }
  {
    auto f = info("shapeless_elementwise");
    EXPECT_TRUE(f.shapeless);
  }
}

// ---- malformed input ----

namespace {
std::string parse_error(const std::vector<uint8_t>& bytes) {
  try {
    parse_bytes(bytes);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(FormatMalformed, TruncationAtEveryOffsetFailsCleanly) {
  auto bytes = read_bytes(golden_dir() + "/binary_add/binary_add.mlxfn");
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + n);
    std::string msg = parse_error(cut);
    EXPECT_THAT(msg, HasSubstr("[import_function]")) << "cut at " << n;
  }
  EXPECT_EQ(parse_error(bytes), "");
}

TEST(FormatMalformed, SpecificErrors) {
  auto base = read_bytes(golden_dir() + "/binary_add/binary_add.mlxfn");
  // binary_add: version 14 bytes, count at 0x0e, shapeless at 0x12; primitive name "Add" at 0xc7.
  auto with = [&](size_t off, std::vector<uint8_t> patch) {
    auto b = base;
    std::copy(patch.begin(), patch.end(), b.begin() + off);
    return parse_error(b);
  };
  EXPECT_THAT(with(0x0e, {0xff, 0xff, 0xff, 0x7f}), HasSubstr("declares 2147483647 functions"));
  EXPECT_THAT(with(0x0e, {0xff, 0xff, 0xff, 0xff}), HasSubstr("non-negative function count"));
  EXPECT_THAT(with(0x12, {0x07}), HasSubstr("Expected a bool"));
  EXPECT_THAT(with(0x13, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f}), HasSubstr("Invalid count for keyword names"));
  // The primitive name: "Add" -> "Adx".
  size_t name_at = 0;
  for (size_t i = 0; i + 3 <= base.size(); ++i) {
    if (base[i] == 'A' && base[i + 1] == 'd' && base[i + 2] == 'd') name_at = i;
  }
  ASSERT_GT(name_at, 0u);
  EXPECT_EQ(with(name_at + 2, {'x'}), "[import_function] Unable to deserialize primitive Adx");
  // The output dtype (last 5 bytes): float32 with item size 2, then an unknown code.
  EXPECT_THAT(with(base.size() - 1, {0x02}), HasSubstr("item size 4 but the file says 2"));
  EXPECT_THAT(with(base.size() - 5, {0x2a}), HasSubstr("dtype code in 0..13 but found 42"));
  // The output shape: recorded (4,3) changed to (4,4) disagrees with Add's rule.
  EXPECT_THAT(with(base.size() - 9, {0x04}), HasSubstr("but the file records"));
  // The stream's device type.
  EXPECT_THAT(with(name_at - 8 - 8, {0x05}), HasSubstr("device type 0 (cpu) or 1 (gpu)"));
  // An input id of the Add node that is not defined.
  EXPECT_THAT(with(name_at - 8 - 12 - 8, {0x99}), HasSubstr("is not defined by an earlier entry"));
}

TEST(FormatMalformed, ArityAndOutputIdChecks) {
  // A hand-built record: one input x, Add(x) with a single input (Add needs 2).
  mx::format::ByteWriter w;
  mx::format::write_header(w, mx::format::kV0_30_1, 1, false);
  w.u64(0);
  mx::format::write_ids(w, {1});
  w.u64(1);
  mx::format::write_shape(w, {2});
  mx::format::write_dtype(w, mx::float32);
  mx::format::write_ids(w, {2});
  w.u64(1);
  w.u64(2);
  w.boolean(true);
  mx::format::write_ids(w, {1});
  mx::format::write_stream(w, {0, 0, 0});
  w.str("Add");
  w.u64(0);
  mx::format::write_shape(w, {2});
  mx::format::write_dtype(w, mx::float32);
  EXPECT_THAT(parse_error(w.bytes()), HasSubstr("Add expects 2 inputs but the node has 1"));

  // Undefined output id.
  mx::format::ByteWriter w2;
  mx::format::write_header(w2, mx::format::kV0_30_1, 1, false);
  w2.u64(0);
  mx::format::write_ids(w2, {1});
  w2.u64(1);
  mx::format::write_shape(w2, {2});
  mx::format::write_dtype(w2, mx::float32);
  mx::format::write_ids(w2, {9});
  w2.u64(0);
  EXPECT_THAT(parse_error(w2.bytes()), HasSubstr("output id 9 is not defined"));

  // A constant whose payload is larger than the file.
  mx::format::ByteWriter w3;
  mx::format::write_header(w3, mx::format::kV0_30_1, 1, false);
  w3.u64(0);
  mx::format::write_ids(w3, {});
  w3.u64(0);
  mx::format::write_ids(w3, {5});
  w3.u64(1);
  w3.u64(5);
  w3.boolean(false);
  w3.boolean(true);
  mx::format::write_shape(w3, {1 << 30, 1 << 30});
  mx::format::write_dtype(w3, mx::float64);
  EXPECT_THAT(parse_error(w3.bytes()), HasSubstr("bytes remain in the file"));
}

// Random byte flips must never crash the reader: every outcome is a parse or an exception.
TEST(FormatMalformed, RandomCorruptionNeverCrashes) {
  std::vector<std::string> names = {"binary_add", "multi_trace_shared_constant", "args_and_kwargs", "divmod",
                                    "sum_prod_min_max"};
  uint64_t seed = 12345;
  auto rnd = [&]() {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return seed >> 33;
  };
  int failures = 0, runs = 0;
  for (auto& n : names) {
    auto base = read_bytes(golden_dir() + "/" + n + "/" + n + ".mlxfn");
    for (int t = 0; t < 300; ++t) {
      auto b = base;
      int flips = 1 + static_cast<int>(rnd() % 4);
      for (int k = 0; k < flips; ++k) b[rnd() % b.size()] = static_cast<uint8_t>(rnd());
      ++runs;
      if (!parse_error(b).empty()) ++failures;
    }
  }
  EXPECT_GT(failures, 0);
  EXPECT_EQ(runs, 1500);
}

TEST(FormatMalformed, RepeatedInputReferenceAndUnknownInput) {
  auto record = [](std::vector<uint64_t> tape_ids) {
    mx::format::ByteWriter w;
    mx::format::write_header(w, mx::format::kV0_30_1, 1, false);
    w.u64(0);
    mx::format::write_ids(w, {1});
    w.u64(1);
    mx::format::write_shape(w, {2});
    mx::format::write_dtype(w, mx::float32);
    mx::format::write_ids(w, {1});
    w.u64(tape_ids.size());
    for (auto id : tape_ids) {
      w.u64(id);
      w.boolean(false);
      w.boolean(false);
    }
    return w.bytes();
  };
  EXPECT_EQ(parse_error(record({1})), "");
  EXPECT_THAT(parse_error(record({1, 1})), HasSubstr("input 1 appears twice on the tape"));
  EXPECT_THAT(parse_error(record({3})), HasSubstr("input reference 3 is not one of the record's input ids"));
}
