#include <fcntl.h>
#include <sys/stat.h>
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

// An output path that is a symbolic link writes its target and keeps the link; one that is not a
// regular file (a FIFO here; /dev/null, a terminal) is written to, never replaced by a file (an
// output to /dev/full once replaced the device, as root).
TEST(WriteFileAtomic, ALinkIsFollowedAndAFifoIsWrittenNotReplaced) {
  const fs::path dir = fs::temp_directory_path() / ("peakcast_io_link_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  ASSERT_TRUE(write_file_atomic((dir / "target.json").string(), "old").is_ok());
  fs::create_symlink("target.json", dir / "link.json");
  ASSERT_TRUE(write_file_atomic((dir / "link.json").string(), "new").is_ok());
  EXPECT_TRUE(fs::is_symlink(dir / "link.json"));
  EXPECT_EQ(*read_file((dir / "target.json").string()), "new");

  fs::create_symlink("made.json", dir / "dangling.json");
  ASSERT_TRUE(write_file_atomic((dir / "dangling.json").string(), "made").is_ok());
  EXPECT_TRUE(fs::is_symlink(dir / "dangling.json"));
  EXPECT_EQ(*read_file((dir / "made.json").string()), "made");

  const std::string fifo = (dir / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // The reader opens first (non-blocking, so nothing waits), the write goes through the pipe's
  // buffer, and the reader then reads it to the writer's close.
  const int rd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(rd, 0);
  const Status s = write_file_atomic(fifo, "through the pipe");
  std::string received;
  char buf[64];
  for (ssize_t n; (n = ::read(rd, buf, sizeof buf)) > 0;) received.append(buf, static_cast<size_t>(n));
  ::close(rd);
  ASSERT_TRUE(s.is_ok()) << s.message();
  EXPECT_EQ(received, "through the pipe");
  EXPECT_TRUE(fs::is_fifo(fifo));

  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 5u);  // target, link, dangling link, made, fifo: no temporary file left
  fs::remove_all(dir);
}

}  // namespace
}  // namespace peakcast
