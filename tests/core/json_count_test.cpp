// json_count: the one rule for a count read from a JSON file (a manifest, a results file).
#include <cstdint>
#include <limits>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "peakcast/core/json_count.h"

namespace peakcast {
namespace {

using nlohmann::json;

TEST(JsonCount, WholeNumbersFromZeroToTwoToThe53AreCounts) {
  EXPECT_EQ(json_count(json(0)), 0u);
  EXPECT_EQ(json_count(json(12)), 12u);                       // a signed integer as C++ gives it
  EXPECT_EQ(json_count(json::parse("12")), 12u);              // as a file gives it (unsigned)
  EXPECT_EQ(json_count(json::parse("12.0")), 12u);            // a float with no fraction
  EXPECT_EQ(json_count(json::parse("1e3")), 1000u);
  EXPECT_EQ(json_count(json::parse("9007199254740992")), kMaxJsonCount);
  EXPECT_EQ(json_count(json(9007199254740992.0)), kMaxJsonCount);
}

TEST(JsonCount, AnythingElseIsNoCount) {
  for (const char* text : {"-1", "-0.5", "2.5", "9007199254740993", "18446744073709551615", "1e300",
                           "-1e300", "\"12\"", "null", "true", "[1]", "{}"}) {
    EXPECT_FALSE(json_count(json::parse(text)).has_value()) << text;
  }
  EXPECT_FALSE(json_count(json(std::numeric_limits<double>::infinity())).has_value());
  EXPECT_FALSE(json_count(json(std::numeric_limits<double>::quiet_NaN())).has_value());
  EXPECT_FALSE(json_count(json(int64_t{-7})).has_value());
}

}  // namespace
}  // namespace peakcast
