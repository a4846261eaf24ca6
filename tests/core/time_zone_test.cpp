// TimeZone: local wall-clock times of a tz database zone to UTC, with the zone's own transitions.
#include "peakcast/core/time_zone.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>

namespace peakcast {
namespace {

// Seconds since the epoch of a calendar time read as UTC (the "local seconds" of the API).
int64_t wall(int y, int mo, int d, int h, int mi) {
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  return static_cast<int64_t>(timegm(&tm));
}

TEST(TimeZone, BerlinAcrossBothChangesOf2023) {
  Result<TimeZone> z = TimeZone::load("Europe/Berlin");
  if (!z) GTEST_SKIP() << z.status().message();
  EXPECT_EQ(z->name(), "Europe/Berlin");
  EXPECT_EQ(*z->utc_of_local(wall(2023, 1, 15, 12, 0)), wall(2023, 1, 15, 11, 0));  // CET, +1
  EXPECT_EQ(*z->utc_of_local(wall(2023, 7, 15, 12, 0)), wall(2023, 7, 15, 10, 0));  // CEST, +2
  EXPECT_EQ(z->offset_at(wall(2023, 7, 15, 10, 0)), 7200);
  // 2023-03-26 02:00 CET -> 03:00 CEST: either side of the gap, and the gap itself.
  EXPECT_EQ(*z->utc_of_local(wall(2023, 3, 26, 1, 59)), wall(2023, 3, 26, 0, 59));
  EXPECT_EQ(*z->utc_of_local(wall(2023, 3, 26, 3, 0)), wall(2023, 3, 26, 1, 0));
  Result<int64_t> gap = z->utc_of_local(wall(2023, 3, 26, 2, 30));
  EXPECT_FALSE(gap);
  EXPECT_NE(gap.status().message().find("skipped"), std::string::npos) << gap.status().message();
  // 2023-10-29 03:00 CEST -> 02:00 CET: 02:30 showed twice; the earlier instant (CEST).
  EXPECT_EQ(*z->utc_of_local(wall(2023, 10, 29, 2, 30)), wall(2023, 10, 29, 0, 30));
  EXPECT_EQ(*z->utc_of_local(wall(2023, 10, 29, 2, 30), TimeZone::TwiceShown::kLater),
            wall(2023, 10, 29, 1, 30));  // ... or the later (CET), when asked
  EXPECT_EQ(*z->utc_of_local(wall(2023, 10, 29, 3, 30), TimeZone::TwiceShown::kLater),
            wall(2023, 10, 29, 2, 30));  // shown once: the one instant either way
  EXPECT_EQ(*z->utc_of_local(wall(2023, 10, 29, 3, 30)), wall(2023, 10, 29, 2, 30));
}

TEST(TimeZone, SouthernHemisphereAndUtc) {
  Result<TimeZone> syd = TimeZone::load("Australia/Sydney");
  if (!syd) GTEST_SKIP() << syd.status().message();
  EXPECT_EQ(*syd->utc_of_local(wall(2023, 1, 15, 12, 0)), wall(2023, 1, 15, 1, 0));  // AEDT, +11
  EXPECT_EQ(*syd->utc_of_local(wall(2023, 7, 15, 12, 0)), wall(2023, 7, 15, 2, 0));  // AEST, +10
  Result<TimeZone> utc = TimeZone::load("UTC");
  ASSERT_TRUE(utc) << utc.status().message();
  EXPECT_EQ(*utc->utc_of_local(wall(2023, 3, 26, 2, 30)), wall(2023, 3, 26, 2, 30));
}

TEST(TimeZone, NamesOutsideTheDatabaseAreRefused) {
  for (const char* name : {"", "/etc/localtime", "../../etc/passwd", "Europe/../../../etc/passwd",
                           "Europe/Atlantis"}) {
    Result<TimeZone> z = TimeZone::load(name);
    EXPECT_FALSE(z) << name;
  }
}

// A zone file whose header counts more transitions than it holds: the count is a four-octet
// unsigned integer (RFC 8536); read as a signed one and multiplied, it wrapped to a size the
// truncation check passed, and the reader walked 2^64 - 1 transitions past the file's end.
TEST(TimeZone, AHeaderCountingMoreThanTheFileHoldsIsRefused) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("peakcast-tzdir-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string tzif = "TZif1" + std::string(15, '\0');
  const unsigned char counts[24] = {0, 0, 0, 0,  0, 0, 0, 0,  0, 0, 0, 0,         // isut, isstd, leap
                                    0xff, 0xff, 0xff, 0xff,  0, 0, 0, 1,  0, 0, 0, 0};  // time, type, chars
  tzif.append(reinterpret_cast<const char*>(counts), sizeof counts);
  tzif.append(std::string(20, '\0'));
  std::ofstream(dir / "Broken", std::ios::binary) << tzif;
  const char* old = std::getenv("TZDIR");
  const std::string saved = old != nullptr ? old : "";
  ::setenv("TZDIR", dir.c_str(), 1);
  Result<TimeZone> z = TimeZone::load("Broken");
  if (old != nullptr) ::setenv("TZDIR", saved.c_str(), 1); else ::unsetenv("TZDIR");
  fs::remove_all(dir);
  ASSERT_FALSE(z);
  EXPECT_NE(z.status().message().find("truncated"), std::string::npos) << z.status().message();
}

}  // namespace
}  // namespace peakcast
