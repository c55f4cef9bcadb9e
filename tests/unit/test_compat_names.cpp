// src/format/compat/: the per-release facts name registry state fields by name. Every name they use
// must exist in its row (disk-only fields must not), and a name that does not exist must fail with an
// error naming the primitive, the field and the release.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <stdexcept>
#include <string>

#include "format/compat/fields.h"
#include "format/compat/version.h"
#include "kiln/kiln.h"

namespace mx = kiln;
namespace compat = kiln::format::compat;
using ::testing::HasSubstr;

namespace {

bool row_has(const mx::PrimitiveDef& def, const std::string& field) {
  for (auto& f : def.fields) {
    if (field == f.name) return true;
  }
  return false;
}

TEST(CompatNames, EveryNameUsedByTheTablesExistsInItsRow) {
  auto uses = compat::field_uses();
  std::set<std::string> prims;
  size_t disk_only = 0;
  for (auto& u : uses) {
    SCOPED_TRACE(u.prim + "." + u.field + " in " + u.release);
    const mx::PrimitiveDef* def = mx::registry::find(u.prim);
    ASSERT_NE(def, nullptr) << "no registry row " << u.prim;
    if (u.disk_only) {
      ++disk_only;
      EXPECT_FALSE(row_has(*def, u.field)) << "disk-only field is also in the registry row";
    } else {
      EXPECT_TRUE(row_has(*def, u.field));
      EXPECT_EQ(def->fields.at(compat::resolve_field(*def, u.field, u.release)).name, u.field);
    }
    prims.insert(u.prim);
  }
  // The tables, value limits and the CPU quirk all take part.
  for (const char* p : {"ScaledDotProductAttention", "Convolution", "GatherMM", "GatherQMM", "QuantizedMatmul",
                        "Quantize", "SVD", "SliceUpdate", "FFT", "DivMod", "CustomKernel", "Scan"}) {
    EXPECT_TRUE(prims.count(p)) << p;
  }
  EXPECT_EQ(disk_only, 4u);  // force_fused, reduce_type, odd_out, compile_options
  EXPECT_GT(uses.size(), 100u);
  EXPECT_NO_THROW(compat::check_names());
}

TEST(CompatNames, EveryFieldRefResolves) {
  ASSERT_FALSE(compat::detail::field_refs().empty());
  for (const compat::FieldRef* ref : compat::detail::field_refs()) {
    const mx::PrimitiveDef& def = mx::registry::get(ref->prim);
    EXPECT_STREQ(def.fields.at(ref->index()).name, ref->field) << ref->prim << " (" << ref->release << ")";
  }
}

TEST(CompatNames, AnUnknownNameNamesThePrimitiveTheFieldAndTheRelease) {
  const mx::PrimitiveDef& conv = mx::registry::get("Convolution");
  EXPECT_EQ(compat::find_field(conv, "padding_mid"), -1);
  EXPECT_EQ(compat::find_field(conv, "padding_hi"), 2);
  try {
    compat::resolve_field(conv, "padding_mid", "the MLX 0.25.2 layout");
    FAIL() << "no error";
  } catch (const std::logic_error& e) {
    std::string m = e.what();
    EXPECT_THAT(m, HasSubstr("[format]"));
    EXPECT_THAT(m, HasSubstr("Convolution"));
    EXPECT_THAT(m, HasSubstr("'padding_mid'"));
    EXPECT_THAT(m, HasSubstr("the MLX 0.25.2 layout"));
    EXPECT_THAT(m, HasSubstr("kernel_strides, padding_lo, padding_hi"));  // what the row has
  }
  EXPECT_THROW(compat::resolve_field(mx::registry::get("DivMod"), "", "the implied value"), std::logic_error);
}

}  // namespace
