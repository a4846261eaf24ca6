#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "peakcast/core/io.h"

namespace peakcast {
namespace {

namespace fs = std::filesystem;

// A failed write names the path the user gave, not the temporary file written beside it.
TEST(WriteFileAtomic, ErrorsNameTheUsersPathAndWhy) {
  const fs::path dir = fs::temp_directory_path() / ("peakcast_io_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string missing = (dir / "no_such_folder" / "x.json").string();
  Status s = write_file_atomic(missing, "{}");
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message().rfind(missing + ": cannot write: the folder ", 0), 0u) << s.message();
  EXPECT_NE(s.message().find("does not exist"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find(".tmp."), std::string::npos) << s.message();

  s = write_file_atomic(dir.string(), "{}");
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message(), dir.string() + ": is a directory (give a file name)");

  const std::string ok = (dir / "x.json").string();
  ASSERT_TRUE(write_file_atomic(ok, "{}").is_ok());
  auto back = read_file(ok);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, "{}");
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 1u);  // no temporary file left behind
  fs::remove_all(dir);
}

}  // namespace
}  // namespace peakcast
