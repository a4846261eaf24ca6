// The generative model's pieces (docs/synth.md): script families whose arguments drive memory,
// VRAM and runtime through fixed formulas; users with request habits; the Slurm script text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "synth/random.h"

namespace peakcast::synth {

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

enum class Family : int {
  kImageTraining = 0,   // PyTorch image classification (GPU)
  kLlmFinetune,         // LLM fine-tuning with accelerate (GPU)
  kAlignment,           // bwa mem | samtools sort array jobs (CPU)
  kMolecularDynamics,   // GROMACS mdrun over MPI ranks (CPU)
  kFeatureEtl,          // pandas/polars feature building over a growing parquet file (CPU)
};
inline constexpr int kNumFamilies = 5;

bool is_gpu(Family f);
std::string_view family_name(Family f);

// One script's arguments. Which fields matter depends on the family (see the comments).
struct Args {
  Family family = Family::kImageTraining;
  int model = 0;           // image/LLM model index; MD system index; alignment reference index
  int batch = 0;           // image: per-GPU batch size; LLM: per-device micro-batch
  int image_size = 0;      // image
  bool amp = false;        // image: mixed precision
  int epochs = 0;          // image
  int seq_len = 0;         // LLM
  bool lora = false;       // LLM: LoRA adapters instead of full fine-tuning
  bool checkpointing = false;  // LLM: gradient checkpointing
  int gpus = 0;            // GPU families
  int threads = 0;         // image: loader workers; alignment/ETL threads; MD: MPI ranks
  int sort_mem_mib = 0;    // alignment: samtools sort -m per thread
  int nsteps_k = 0;        // MD: thousands of steps
  bool polars = false;     // ETL engine (else pandas)
  int dataset = 0;         // image/ETL/alignment: dataset index
  int year = 0;            // ETL: which year's file (file size grows with it)
};

// The formula part of a run's outcome (before per-script quirks and per-run noise).
struct Expected {
  double mem_gib = 0;            // host memory peak, whole job
  double vram_gib_per_gpu = 0;   // 0 for CPU families
  double minutes = 0;            // runtime
};

Expected expected_usage(const Args& a, double input_gib);

// Hidden input size of one run in GiB (0 when the family reads no sized input): alignment
// samples vary run to run; the ETL file grows with its year index and with time (`day`).
double draw_input_gib(const Args& a, double day, Rng& rng);

Args sample_args(Family f, Rng& rng);
// Changes one argument the way people edit scripts (double the batch, a bigger model, more
// threads, next year's file, ...). Always returns different arguments.
Args edit_args(const Args& a, Rng& rng);
// A sweep step: the next value of the family's main size argument (batch, seq_len, threads, ...).
Args sweep_next(const Args& a);

// What a user asks for.
struct Request {
  double mem_gib = 0;          // whole job
  bool mem_per_cpu = false;    // written as --mem-per-cpu (MD users)
  int cpus = 1;
  int gpus = 0;
  int64_t time_s = 3600;
  std::string partition;
  double gpu_mem_gib = 0;      // capacity of one GPU (40 or 80), GPU jobs only
};

// Rounds a memory request up to the sizes people type (1, 2, 4, 6, 8, 12, 16, 24, 32, 48, 64, ...).
double nice_mem_gib(double gib);
// Rounds a walltime up to a usual limit (30 min, 1 h, 2 h, 4 h, 8 h, 12 h, 1-3 d, 5 d, 7 d).
int64_t nice_time_s(double seconds);

struct User {
  std::string name;
  std::string email;
  std::string account;
  std::string env;          // conda / venv name
  std::string hf_token;     // literal token some users paste into scripts (empty: none)
  bool mail = false;        // writes --mail-user
  int mem_style = 0;        // 0: --mem=32G, 1: --mem=32000M (thousands of MB)
  double inflation = 1.5;   // request / guessed peak
  double guess_sigma = 0.3; // how far the user's guess of the peak is off (log scale)
  double time_inflation = 2;
  bool fixed_request = false;   // keeps one --mem per family whatever the arguments
  bool prefers_big_gpu = false; // asks for 80 GB cards
  double env_overhead_gib = 0;  // extra host memory of the user's environment
  double activity = 1;
  double join_day = 0;
  double new_script_prob = 0.06;
  double edit_prob = 0.2;
  double update_request_prob = 0.5;  // on an edit, re-derives --mem from the new arguments
  std::vector<int> families;         // the families this user works with
  std::vector<double> family_weights;
};

// A Slurm batch script for the arguments and request, in the user's style.
std::string render_script(const Args& a, const Request& r, const User& u, int variant);

// The job name written in the script.
std::string job_name_for(const Args& a);

}  // namespace peakcast::synth
