#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "peakcast/core/job.h"
#include "peakcast/core/units.h"

namespace peakcast {

TEST(Units, ParseSize) {
  EXPECT_EQ(parse_size("4096"), 4096u);
  EXPECT_EQ(parse_size("4K"), 4096u);
  EXPECT_EQ(parse_size("1.50G"), 1610612736u);
  EXPECT_EQ(parse_size("4 GB"), 4294967296u);
  EXPECT_EQ(parse_size("512 KiB"), 524288u);
  EXPECT_EQ(parse_size("4000", 1024 * 1024), 4000u * 1024 * 1024);
  EXPECT_FALSE(parse_size("abc"));
  EXPECT_FALSE(parse_size("4Q"));
  EXPECT_FALSE(parse_size(""));
}

TEST(Units, SlurmDuration) {
  EXPECT_EQ(parse_slurm_duration("02:30:00"), 9000);
  EXPECT_EQ(parse_slurm_duration("1-00:00:00"), 86400);
  EXPECT_EQ(parse_slurm_duration("1-02"), 93600);
  EXPECT_EQ(parse_slurm_duration("30"), 1800);
  EXPECT_EQ(parse_slurm_duration("05:30"), 330);
  EXPECT_FALSE(parse_slurm_duration("UNLIMITED"));
  EXPECT_FALSE(parse_slurm_duration("x:y"));
}

TEST(Units, Timestamp) {
  EXPECT_EQ(parse_timestamp_ms("1674490103"), 1674490103000LL);
  EXPECT_EQ(parse_timestamp_ms("1674490103249"), 1674490103249LL);
  EXPECT_EQ(parse_timestamp_ms("1674490103.25"), 1674490103250LL);
  EXPECT_EQ(parse_timestamp_ms("2023-01-23T16:08:23"), 1674490103000LL);
  EXPECT_EQ(parse_timestamp_ms("2023-01-23 16:08:23.000"), 1674490103000LL);
  EXPECT_EQ(parse_timestamp_ms("2023-01-23 16:08:23.249"), 1674490103249LL);
  EXPECT_FALSE(parse_timestamp_ms("Unknown"));
  EXPECT_FALSE(parse_timestamp_ms("1674490103."));
  EXPECT_FALSE(parse_timestamp_ms("1.2.3"));
  EXPECT_FALSE(parse_timestamp_ms("2023-13-01T00:00:00"));
}

// Exponents, signs and values past 100 years are refused before any arithmetic: "1e300" was cast
// from a double out of int64's range, and "213503982334602-00" overflowed the day product and
// came back as 61,184 seconds.
TEST(Units, SlurmDurationRefusesExponentsAndOutOfRangeValues) {
  for (const char* garbage : {"1e300", "1e5", "1E5", "213503982334602-00", "99999999999999999",
                              "36526-00:00:00", "+5", "-5", "0x10", "1.5", "1.5:00", "00:00:1e3",
                              "1-1e3", "5 6", "inf", "nan", "01:02:03:04", ":", ""}) {
    EXPECT_FALSE(parse_slurm_duration(garbage)) << garbage;
  }
  EXPECT_EQ(parse_slurm_duration("36525-00:00:00"), 36525LL * 86400);  // 100 years: the limit
  EXPECT_EQ(parse_slurm_duration("00:00.123"), 0);                     // Elapsed's fraction
  EXPECT_EQ(parse_slurm_duration("01:02.5"), 62);
  EXPECT_EQ(parse_slurm_duration("1-02:03:04"), 93784);
  EXPECT_EQ(parse_slurm_duration("7-00:00"), 7 * 86400);
}

// The ISO form is read whole: text after it is refused, a zone after it applied; without a zone
// the caller's offset holds (sacct and Nextflow print local time bare).
TEST(Units, TimestampRefusesTrailingTextAndAppliesAZone) {
  for (const char* garbage : {"2023-01-23T10:00:00garbage", "2023-01-23T10:00:00 x",
                              "2023-01-23garbage", "2023-01-23T10:00:00+2", "2023-01-23T10:00:00+0200",
                              "2023-01-23T10:00:00+24:00", "2023-01-23T10:00:00ZZ", "2023-01-23T10",
                              "2023-01-23T10:00:00.", "23-01-23T10:00:00", "2023-01-23X10:00:00"}) {
    EXPECT_FALSE(parse_timestamp_ms(garbage)) << garbage;
  }
  EXPECT_EQ(parse_timestamp_ms("2023-01-23T16:08:23Z"), 1674490103000LL);
  EXPECT_EQ(parse_timestamp_ms("2023-01-23T18:08:23+02:00"), 1674490103000LL);
  EXPECT_EQ(parse_timestamp_ms("2023-01-23T14:38:23-01:30"), 1674490103000LL);
  EXPECT_EQ(parse_timestamp_ms("2023-01-23 16:08:23.249Z"), 1674490103249LL);
  EXPECT_EQ(parse_timestamp_ms("2023-01-23T16:08Z"), 1674490080000LL);
  EXPECT_EQ(parse_timestamp_ms("2023-01-23"), 1674432000000LL);
  // A zone in the text wins over the caller's offset; without one the offset applies.
  EXPECT_EQ(parse_timestamp_ms("2023-01-23T16:08:23Z", 3600), 1674490103000LL);
  EXPECT_EQ(parse_timestamp_ms("2023-01-23T17:08:23", 3600), 1674490103000LL);
}

TEST(Labels, MemAndVramMasks) {
  Job j;
  j.req_mem_bytes = 1000;
  j.peak_mem_bytes = 250;
  compute_labels(j);
  EXPECT_TRUE(j.is_valid(Resource::kMem));
  EXPECT_DOUBLE_EQ(j.label(Resource::kMem), 0.25);
  EXPECT_FALSE(j.is_valid(Resource::kVram));  // no GPUs

  j.req_gpus = 2;
  j.gpu_mem_bytes = 100;
  j.peak_vram_bytes = 300;  // 300 / 200 -> clipped
  compute_labels(j);
  EXPECT_TRUE(j.is_valid(Resource::kVram));
  EXPECT_TRUE(j.clipped[idx(Resource::kVram)]);
  EXPECT_DOUBLE_EQ(j.label(Resource::kVram), 1.0);
  compute_labels(j, 2.0);
  EXPECT_DOUBLE_EQ(j.label(Resource::kVram), 1.5);
}

TEST(Labels, OutOfMemoryIsCensoredAtCap) {
  Job j;
  j.state = normalize_state("OUT_OF_MEMORY");
  j.req_mem_bytes = 1000;
  compute_labels(j);
  EXPECT_TRUE(j.censored);
  EXPECT_TRUE(j.is_valid(Resource::kMem));
  EXPECT_DOUBLE_EQ(j.label(Resource::kMem), 1.0);
}

// An OOM job used at least its limit: clipped at a cap <= 1 its label is exact, above 1 it is
// a lower bound. A job that was not killed has an exact label under any cap.
TEST(Labels, CensoredLabelIsExactOnlyUnderACapOfOne) {
  Job j;
  j.state = "OUT_OF_MEMORY";
  j.req_mem_bytes = 1000;
  j.peak_mem_bytes = 900;  // the last sample before the kill
  compute_labels(j, 1.0);
  EXPECT_TRUE(censored_for(j, Resource::kMem));
  EXPECT_TRUE(label_exact(j, Resource::kMem, 1.0));
  EXPECT_TRUE(label_exact(j, Resource::kMem, 0.8));
  EXPECT_FALSE(label_exact(j, Resource::kMem, 2.0));
  EXPECT_TRUE(label_exact(j, Resource::kVram, 2.0));  // not the resource that killed it
  Job ok;
  ok.req_mem_bytes = 1000;
  ok.peak_mem_bytes = 1500;
  compute_labels(ok, 2.0);
  EXPECT_TRUE(label_exact(ok, Resource::kMem, 2.0));
}

// Killed at a limit below its request (peakcastd's hook lowered --mem; Job::ran_mem_bytes): it
// used at least that limit's share of the request, a lower bound under any cap.
TEST(Labels, KilledAtALoweredLimitIsCensoredAtThatLimitsShare) {
  Job j;
  j.state = "OUT_OF_MEMORY";
  j.req_mem_bytes = 1000;
  j.ran_mem_bytes = 400;
  compute_labels(j, 1.0);
  EXPECT_TRUE(censored_for(j, Resource::kMem));
  EXPECT_TRUE(j.is_valid(Resource::kMem));
  EXPECT_DOUBLE_EQ(j.label(Resource::kMem), 0.4);
  EXPECT_FALSE(label_exact(j, Resource::kMem, 1.0));
  j.peak_mem_bytes = 380;  // the last sample before the kill, below the limit: the limit holds
  compute_labels(j, 1.0);
  EXPECT_DOUBLE_EQ(j.label(Resource::kMem), 0.4);
  Job done = j;  // completed at the lowered limit: an exact share of the request
  done.state = "COMPLETED";
  compute_labels(done, 1.0);
  EXPECT_FALSE(done.censored);
  EXPECT_DOUBLE_EQ(done.label(Resource::kMem), 0.38);
  EXPECT_TRUE(label_exact(done, Resource::kMem, 1.0));
}

TEST(State, Normalize) {
  EXPECT_EQ(normalize_state("CANCELLED by 0"), "CANCELLED");
  EXPECT_EQ(normalize_state("completed"), "COMPLETED");
  EXPECT_EQ(normalize_state("OOM"), "OUT_OF_MEMORY");
  EXPECT_EQ(normalize_state(""), "COMPLETED");
  // Every short code squeue and sacct print maps to its long name.
  EXPECT_EQ(normalize_state("CG"), "COMPLETING");
  EXPECT_EQ(normalize_state("s"), "SUSPENDED");
  EXPECT_EQ(normalize_state("RQ"), "REQUEUED");
  EXPECT_EQ(normalize_state("SE"), "SPECIAL_EXIT");
  EXPECT_EQ(normalize_state("RD"), "RESV_DEL_HOLD");
  // What it maps to is what the daemon accepts as a state; a misspelling is not.
  for (const char* code : {"CD", "OOM", "CA", "cg", "SE", "RD", "PR"}) {
    EXPECT_TRUE(is_slurm_state(normalize_state(code))) << code;
  }
  EXPECT_TRUE(is_slurm_state(normalize_state("CANCELLED by 0")));
  EXPECT_FALSE(is_slurm_state(normalize_state("OUT_OF_MEMROY")));
  EXPECT_NE(slurm_state_names().find("COMPLETED, FAILED, OUT_OF_MEMORY"), std::string::npos);
}

}  // namespace peakcast

namespace peakcast {

TEST(Labels, GpuOutOfMemoryCensorsVramOnly) {
  // A VRAM-only trace (no host-memory peak recorded): the OOM was the GPU's.
  Job j;
  j.state = "OUT_OF_MEMORY";
  j.req_mem_bytes = 1000;
  j.req_gpus = 1;
  j.gpu_mem_bytes = 100;
  j.peak_vram_bytes = 97;
  compute_labels(j);
  EXPECT_TRUE(j.censored);
  EXPECT_FALSE(j.is_valid(Resource::kMem));  // no invented memory label
  EXPECT_TRUE(j.is_valid(Resource::kVram));
  EXPECT_DOUBLE_EQ(j.label(Resource::kVram), 1.0);
}

TEST(Labels, HostOutOfMemoryKeepsVramMeasurement) {
  Job j;
  j.state = "OUT_OF_MEMORY";
  j.req_mem_bytes = 1000;
  j.peak_mem_bytes = 990;
  j.req_gpus = 1;
  j.gpu_mem_bytes = 100;
  j.peak_vram_bytes = 40;
  compute_labels(j);
  EXPECT_DOUBLE_EQ(j.label(Resource::kMem), 1.0);
  EXPECT_DOUBLE_EQ(j.label(Resource::kVram), 0.4);
}

}  // namespace peakcast

namespace peakcast {
TEST(Units, ParseSizeAboveInt64Range) {
  // Regression: 10 EiB is above INT64_MAX; it must not wrap.
  auto v = parse_size("10E", 1);  // unknown suffix E -> rejected
  EXPECT_FALSE(v);
  auto big = parse_size("9000P");  // 9000 PiB ~ 1.01e19 bytes
  ASSERT_TRUE(big);
  EXPECT_GT(*big, 9223372036854775807ULL);
  EXPECT_FALSE(parse_size("20000P"));  // ~2.3e19 > uint64 range
}

TEST(Units, BytesFromDoubleRoundsAndSaturates) {
  EXPECT_EQ(bytes_from_double(2.5), 3u);
  EXPECT_EQ(bytes_from_double(1e9 + 0.4), 1'000'000'000u);
  EXPECT_EQ(bytes_from_double(0.0), 0u);
  EXPECT_EQ(bytes_from_double(-5.0), 0u);
  EXPECT_EQ(bytes_from_double(std::nan("")), 0u);
  EXPECT_EQ(bytes_from_double(1.8e19), 18'000'000'000'000'000'000ull);
  EXPECT_EQ(bytes_from_double(18446744073709549568.0), 18446744073709549568ull);  // the last double below 2^64
  EXPECT_EQ(bytes_from_double(18446744073709551616.0), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(bytes_from_double(1e300), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(bytes_from_double(std::numeric_limits<double>::infinity()), std::numeric_limits<uint64_t>::max());
}
}  // namespace peakcast
