// read_trace() detects the format from a bounded prefix (include/peakcast/core/input_file.h): content that
// is no trace fails before the rest is read; detection that needs more than the first 64 KiB
// reads on; a prefix and the rest join into the same text a whole read gave.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <thread>

#include "golden_util.h"
#include "peakcast/ingest/reader.h"

namespace peakcast::ingest {
namespace {

using test_util::golden;
using test_util::temp_path;
using test_util::write_text;

void write_gzip(const std::string& path, std::string_view text) {
  gzFile gz = gzopen(path.c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  ASSERT_EQ(gzwrite(gz, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
  gzclose(gz);
}

// A writer feeds 64 MiB of lines that are no trace into a FIFO: the reader must give up after a
// prefix (the writer then sees the pipe closed) instead of reading all of it, as it did when the
// whole input was read before detection (`peakcast inspect /dev/urandom` never ended).
TEST(ReaderPrefix, ContentThatIsNoTraceFailsBeforeTheRestIsRead) {
  const std::string fifo = temp_path("endless.fifo");
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  ::signal(SIGPIPE, SIG_IGN);  // a write to the closed pipe fails with EPIPE instead
  constexpr size_t kTotal = size_t{64} << 20;
  size_t written = 0;
  std::thread writer([&] {
    const int fd = ::open(fifo.c_str(), O_WRONLY);
    if (fd < 0) return;
    std::string chunk;
    while (chunk.size() < (size_t{1} << 16)) chunk += "\x01\x7f binary noise, no trace here\n";
    while (written < kTotal) {
      const ssize_t n = ::write(fd, chunk.data(), std::min(chunk.size(), kTotal - written));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // EPIPE: the reader closed its end
      written += static_cast<size_t>(n);
    }
    ::close(fd);
  });
  auto trace = read_trace(fifo);
  writer.join();
  ::unlink(fifo.c_str());
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.status().message().find("cannot tell the trace format"), std::string::npos)
      << trace.status().message();
  EXPECT_LT(written, kTotal) << "the reader read the whole input before telling the format";
  EXPECT_LE(written, size_t{4} << 20);
}

// 100 KiB of blank lines before the first record: detection reads past the first 64 KiB.
TEST(ReaderPrefix, BlankLinesPastTheFirstPrefixStillDetect) {
  auto canonical = read_file(golden("canonical.jsonl"));
  ASSERT_TRUE(canonical.ok());
  const std::string text = std::string(100 << 10, '\n') + *canonical;
  for (bool gz : {false, true}) {
    const std::string path = temp_path(gz ? "blank_first.bin.gz" : "blank_first.bin");
    if (gz) {
      write_gzip(path, text);
    } else {
      write_text(path, text);
    }
    auto trace = read_trace(path);
    ASSERT_TRUE(trace.ok()) << trace.status().message();
    EXPECT_EQ(trace->format, Format::kJsonl);
    auto whole = read_trace(golden("canonical.jsonl"));
    ASSERT_TRUE(whole.ok());
    EXPECT_EQ(trace->jobs.size(), whole->jobs.size());
  }
}

// An SWF comment header of 150 KiB (all comments; SWF is told by its data lines after it).
TEST(ReaderPrefix, ALongSwfHeaderStillDetects) {
  auto swf = read_file(golden("small.swf"));
  ASSERT_TRUE(swf.ok());
  std::string text;
  for (int i = 0; i < 150; ++i) text += "; Note: " + std::string(1000, 'x') + "\n";
  text += *swf;
  const std::string path = temp_path("long_header.dat");
  write_text(path, text);
  auto trace = read_trace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->format, Format::kSwf);
  auto whole = read_trace(golden("small.swf"));
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(trace->jobs.size(), whole->jobs.size());
}

// A first record longer than the prefix (a 300 KiB script), plain and gzip: the prefix and the
// rest join into the whole text.
TEST(ReaderPrefix, ARecordLongerThanThePrefixIsReadWhole) {
  const std::string script = "#!/bin/bash\n" + std::string(300 << 10, 'a');
  nlohmann::json rec = {{"job_id", "1"}, {"user", "u"}, {"submit_time", 1000}, {"end_time", 2000},
                        {"script", script}, {"peak_mem_bytes", 5}};
  const std::string text = rec.dump() + "\n" + rec.dump() + "\n";
  for (bool gz : {false, true}) {
    const std::string path = temp_path(gz ? "long_record.x" : "long_record.y");
    if (gz) {
      write_gzip(path, text + text);  // two members' worth in one, then checked as four jobs
    } else {
      write_text(path, text + text);
    }
    auto trace = read_trace(path);
    ASSERT_TRUE(trace.ok()) << trace.status().message();
    EXPECT_EQ(trace->format, Format::kJsonl);
    ASSERT_EQ(trace->jobs.size(), 4u);
    ASSERT_TRUE(trace->jobs[3].script.has_value());
    EXPECT_EQ(trace->jobs[3].script->size(), script.size());
  }
}

// Concatenated gzip members (`cat a.gz b.gz`) read as one text; a truncated member is an error.
TEST(ReaderPrefix, ConcatenatedGzipMembersAndTruncatedGzip) {
  auto demo = read_file(golden("canonical.jsonl"));
  ASSERT_TRUE(demo.ok());
  const std::string a = temp_path("member_a.gz");
  write_gzip(a, *demo);
  auto one = read_file(a);
  ASSERT_TRUE(one.ok());
  auto compressed = [&] {
    std::ifstream in(a, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }();
  const std::string both = temp_path("members.gz");
  write_text(both, compressed + compressed);
  auto trace = read_trace(both);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  auto whole = read_trace(golden("canonical.jsonl"));
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(trace->jobs.size(), 2 * whole->jobs.size());

  const std::string cut = temp_path("cut.gz");
  write_text(cut, compressed.substr(0, compressed.size() - 10));
  auto bad = read_trace(cut);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("corrupt or truncated gzip data"), std::string::npos)
      << bad.status().message();
}

// Found in review: a gzip whose first 64 KiB are of no format and whose data is corrupt past them
// said "cannot tell the trace format" (only the prefix was inflated); the corruption is the
// truer answer. A corrupt gzip of a format that is told still says corrupt.
TEST(ReaderPrefix, CorruptGzipPastThePrefixSaysCorrupt) {
  // Lines of hex that compress poorly: the compressed file is far longer than the prefix reads.
  // The same hex as JSONL records (of no use, but told as JSONL from the first lines).
  std::string noise;
  auto canonical = read_file(golden("canonical.jsonl"));
  ASSERT_TRUE(canonical.ok());
  std::string jsonl = *canonical;
  uint64_t x = 88172645463325252ull;
  while (noise.size() < (size_t{4} << 20)) {
    std::string hex;
    for (int i = 0; i < 4; ++i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      for (int shift = 60; shift >= 0; shift -= 4) hex += "0123456789abcdef"[(x >> shift) & 0xf];
    }
    noise += hex + "\n";
    jsonl += "{\"note\": \"" + hex + "\"}\n";
  }
  for (const std::string* text : {&noise, &jsonl}) {
    const std::string whole = temp_path("corrupt_whole.gz");
    write_gzip(whole, *text);
    std::ifstream in(whole, std::ios::binary);
    const std::string gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_GT(gz.size(), size_t{1} << 20);
    std::string bad_crc = gz;
    bad_crc[gz.size() - 8] = static_cast<char>(bad_crc[gz.size() - 8] ^ 0x55);
    for (const std::string& bytes : {gz.substr(0, gz.size() - 100), bad_crc}) {
      const std::string path = temp_path("corrupt.dat");  // a name that tells no format
      write_text(path, bytes);
      auto trace = read_trace(path);
      ASSERT_FALSE(trace.ok());
      EXPECT_NE(trace.status().message().find("corrupt or truncated gzip data"), std::string::npos)
          << trace.status().message();
    }
  }
  // Intact, the text of no format still says so.
  const std::string intact = temp_path("intact.dat");
  write_gzip(intact, noise);
  auto trace = read_trace(intact);
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.status().message().find("cannot tell the trace format"), std::string::npos)
      << trace.status().message();
}

// A gzip member of `n` zero bytes: 1 MiB of zeros deflates to about 1 KiB, so many members make a
// long text from a short file.
std::string gzip_zeros_member(size_t n) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY), Z_OK);
  std::string zeros(n, '\0');
  std::string out(deflateBound(&zs, static_cast<uLong>(n)), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(zeros.data());
  zs.avail_in = static_cast<uInt>(n);
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// Found in review: a gzip of no format was inflated to its end before "cannot tell the trace
// format" (so that corruption past the prefix says corrupt), however long it was: `peakcast
// inspect` on 1 GB of gzipped zeros inflated all of it. A writer feeds 1 GiB of zeros, as gzip
// members of 1 MiB, into a FIFO: the reader must stop after a bounded part (the writer then sees
// the pipe closed) and say how much it judged.
TEST(ReaderPrefix, AGzipOfNoFormatIsInflatedOnlyToABound) {
  const std::string member = gzip_zeros_member(size_t{1} << 20);
  ASSERT_LT(member.size(), size_t{4} << 10);
  const std::string fifo = temp_path("zeros.fifo");
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  ::signal(SIGPIPE, SIG_IGN);  // a write to the closed pipe fails with EPIPE instead
  constexpr size_t kMembers = 1024;
  const size_t total = kMembers * member.size();
  size_t written = 0;
  std::thread writer([&] {
    const int fd = ::open(fifo.c_str(), O_WRONLY);
    if (fd < 0) return;
    for (size_t i = 0; i < kMembers; ++i) {
      size_t off = 0;
      while (off < member.size()) {
        const ssize_t n = ::write(fd, member.data() + off, member.size() - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;  // EPIPE: the reader closed its end
        off += static_cast<size_t>(n);
        written += static_cast<size_t>(n);
      }
      if (off < member.size()) break;
    }
    ::close(fd);
  });
  auto trace = read_trace(fifo);
  writer.join();
  ::unlink(fifo.c_str());
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.status().message().find("cannot tell the trace format from the first 64 MiB"),
            std::string::npos)
      << trace.status().message();
  // 64 MiB of text is 64 members (~67 KB); the reader's buffer and the pipe's hold at most 64 KiB
  // each: ~200 KB of the ~1 MB.
  EXPECT_LT(written, total / 2) << "the reader inflated the whole gzip before telling the format";
}

// Within the bound, corruption is still found; past it, the message says what was judged.
TEST(ReaderPrefix, GzipDamagePastTheBoundIsNotLookedFor) {
  const std::string member = gzip_zeros_member(size_t{1} << 20);
  auto members = [&](size_t n) {
    std::string gz;
    for (size_t i = 0; i < n; ++i) gz += member;
    return gz;
  };
  const std::string path = temp_path("zeros.dat");  // a name that tells no format
  // 40 MiB, the last member cut short: inflated to its end, so corrupt.
  write_text(path, members(40).substr(0, 40 * member.size() - 10));
  auto short_cut = read_trace(path);
  ASSERT_FALSE(short_cut.ok());
  EXPECT_NE(short_cut.status().message().find("corrupt or truncated gzip data"), std::string::npos)
      << short_cut.status().message();
  // 40 MiB intact: of no format, judged whole.
  write_text(path, members(40));
  auto short_whole = read_trace(path);
  ASSERT_FALSE(short_whole.ok());
  EXPECT_NE(short_whole.status().message().find("cannot tell the trace format from its content"),
            std::string::npos)
      << short_whole.status().message();
  // 80 MiB, intact or cut short: only the first 64 MiB are inflated, and the message says so.
  for (size_t cut : {size_t{0}, size_t{10}}) {
    write_text(path, members(80).substr(0, 80 * member.size() - cut));
    auto long_gz = read_trace(path);
    ASSERT_FALSE(long_gz.ok());
    EXPECT_NE(long_gz.status().message().find("cannot tell the trace format from the first 64 MiB"),
              std::string::npos)
        << long_gz.status().message();
  }
}

}  // namespace
}  // namespace peakcast::ingest
