#include "peakcast/core/io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "peakcast/core/input_file.h"

namespace peakcast {

Result<std::string> read_file(const std::string& path) {
  Result<InputFile> in = InputFile::open(path);
  if (!in) return in.status();
  std::string text;
  if (Status s = in->read_rest(text); !s) return s;
  return text;
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    size_t end = nl == std::string_view::npos ? text.size() : nl;
    std::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  return lines;
}

std::vector<std::string_view> split(std::string_view s, char delim) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (true) {
    size_t p = s.find(delim, pos);
    if (p == std::string_view::npos) {
      out.push_back(s.substr(pos));
      break;
    }
    out.push_back(s.substr(pos, p - pos));
    pos = p + 1;
  }
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' ||
                        s.front() == '\n')) {
    s.remove_prefix(1);
  }
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

namespace {

// Writes all of `data` to an open descriptor; errno on failure.
bool write_all(int fd, std::string_view data) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    off += static_cast<size_t>(n);
  }
  return true;
}

// Something that is not a regular file (a terminal, /dev/null, a FIFO a reader waits on): written
// to as it is, as a shell's `>` would, never replaced by a file.
Status write_special(const std::string& path, std::string_view data) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Status::io(path + ": cannot write: " + std::strerror(errno));
  if (!write_all(fd, data)) {
    Status s = Status::io(path + ": write: " + std::strerror(errno));
    ::close(fd);
    return s;
  }
  if (::close(fd) != 0) return Status::io(path + ": close: " + std::strerror(errno));
  return Status::ok();
}

}  // namespace

// Errors name the file the caller asked for (the temporary file beside it is ours, not theirs).
Status write_file_atomic(const std::string& given, std::string_view data) {
  // A symbolic link is followed: its target is written (atomically, if a regular file) and the
  // link stays. A dangling one creates its target.
  std::filesystem::path link = given;
  struct stat lst {};
  for (int hops = 0; ::lstat(link.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode); ++hops) {
    std::error_code ec;
    const std::filesystem::path target = std::filesystem::read_symlink(link, ec);
    if (ec) return Status::io(given + ": cannot follow the link: " + ec.message());
    if (hops == 40) return Status::io(given + ": cannot follow the link: " + std::strerror(ELOOP));
    link = target.is_absolute() ? target : link.parent_path() / target;
  }
  const std::string path = link.lexically_normal().string();
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return Status::io(given + ": is a directory (give a file name)");
    if (!S_ISREG(st.st_mode)) {
      Status s = write_special(path, data);
      return s.is_ok() || path == given ? s : s.with_context(given);
    }
  }
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    const std::string dir = std::filesystem::path(path).parent_path().string();
    if (err == ENOENT) return Status::io(given + ": cannot write: the folder " + (dir.empty() ? "." : dir) + " does not exist");
    return Status::io(given + ": cannot write: " + std::strerror(err));
  }
  if (!write_all(fd, data)) {
    Status s = Status::io(given + ": write: " + std::strerror(errno));
    ::close(fd);
    ::unlink(tmp.c_str());
    return s;
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    return Status::io(given + ": fsync/close: " + std::strerror(errno));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return Status::io(given + ": rename: " + std::strerror(errno));
  }
  return Status::ok();
}

}  // namespace peakcast
