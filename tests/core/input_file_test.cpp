// InputFile::from_bytes(): bytes in memory read as a file of them is (input_file.h). The file
// reader itself is tested through read_trace (tests/ingest/reader_prefix_test.cpp).
#include <zlib.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>

#include "peakcast/core/input_file.h"

namespace peakcast {
namespace {

std::string gzip(const std::string& text) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 1, Z_DEFLATED, 16 + 15, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string gz(deflateBound(&zs, static_cast<uLong>(text.size())) + 32, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(gz.data());
  zs.avail_out = static_cast<uInt>(gz.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  gz.resize(zs.total_out);
  deflateEnd(&zs);
  return gz;
}

// Bytes that do not compress, so that the gzip is several of the reader's 64 KiB chunks.
std::string noise(size_t size, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(size, '\0');
  for (char& c : s) c = static_cast<char>(rng() & 0xff);
  return s;
}

// Read in uneven steps, as a caller bounding what it holds does.
std::string read_in_steps(InputFile& in, size_t step) {
  std::string out;
  while (!in.at_end()) {
    const size_t before = out.size();
    const Status s = in.read(out, step);
    EXPECT_TRUE(s.is_ok()) << s.message();
    if (!s.is_ok()) break;
    EXPECT_TRUE(out.size() - before == step || in.at_end()) << "fewer only at the end";
  }
  return out;
}

TEST(InputFileFromBytes, GzipOfManyChunksAndConcatenatedMembersReadWhole) {
  const std::string a = noise(300'000, 1), b = noise(70'000, 2);
  const std::string gz = gzip(a) + gzip(b);
  ASSERT_GT(gz.size(), size_t{5} << 16);
  InputFile in = InputFile::from_bytes(gz, "summary");
  const std::string got = read_in_steps(in, 99'991);
  EXPECT_TRUE(in.compressed());
  EXPECT_EQ(got.size(), a.size() + b.size());
  EXPECT_TRUE(got == a + b);
  InputFile whole = InputFile::from_bytes(gz, "summary");
  std::string rest;
  ASSERT_TRUE(whole.read_rest(rest).is_ok());
  EXPECT_TRUE(rest == a + b);
}

TEST(InputFileFromBytes, PlainBytesAreTheText) {
  const std::string text = noise(200'000, 3).replace(0, 2, "ab");  // no gzip magic
  InputFile in = InputFile::from_bytes(text, "summary");
  EXPECT_TRUE(read_in_steps(in, 65'537) == text);
  EXPECT_FALSE(in.compressed());
  InputFile empty = InputFile::from_bytes("", "summary");
  std::string out;
  ASSERT_TRUE(empty.read(out, 10).is_ok());
  EXPECT_TRUE(out.empty());
  EXPECT_TRUE(empty.at_end());
}

// Cut short, or followed by bytes that are no gzip member: a zlib stream (0x78 0x9c) included,
// which an inflate that takes zlib or gzip headers read as a next member.
TEST(InputFileFromBytes, ErrorsNameTheBytes) {
  const std::string gz = gzip(noise(150'000, 4));
  std::string zlib_stream(compressBound(5), '\0');
  uLongf zlib_size = static_cast<uLongf>(zlib_stream.size());
  ASSERT_EQ(compress(reinterpret_cast<Bytef*>(zlib_stream.data()), &zlib_size,
                     reinterpret_cast<const Bytef*>("hello"), 5), Z_OK);
  zlib_stream.resize(zlib_size);
  ASSERT_EQ(static_cast<unsigned char>(zlib_stream[0]), 0x78);
  for (const std::string& bad :
       {gz.substr(0, gz.size() - 1), gz.substr(0, gz.size() / 2), gz + "x", gz + zlib_stream}) {
    InputFile in = InputFile::from_bytes(bad, "AdminComment");
    std::string out;
    const Status s = in.read_rest(out);
    ASSERT_FALSE(s.is_ok()) << bad.size() << " bytes";
    EXPECT_EQ(s.message(), "AdminComment: corrupt or truncated gzip data");
    EXPECT_EQ(s.kind(), ErrorKind::kInvalidInput);
  }
}

}  // namespace
}  // namespace peakcast
