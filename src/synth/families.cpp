// Script families: argument spaces, the edits people make, and the formulas that turn arguments
// into memory, VRAM and runtime (docs/synth.md, "Families").
#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

#include "synth/families_tables.h"
#include "synth/model.h"

namespace peakcast::synth {

bool is_gpu(Family f) { return f == Family::kImageTraining || f == Family::kLlmFinetune; }

std::string_view family_name(Family f) {
  switch (f) {
    case Family::kImageTraining: return "image-training";
    case Family::kLlmFinetune: return "llm-finetune";
    case Family::kAlignment: return "alignment";
    case Family::kMolecularDynamics: return "molecular-dynamics";
    case Family::kFeatureEtl: return "feature-etl";
  }
  throw std::logic_error("family_name: bad family");
}

namespace {

template <typename T, size_t N>
int index_of(const std::array<T, N>& values, T v) {
  for (size_t i = 0; i < N; ++i) {
    if (values[i] == v) return static_cast<int>(i);
  }
  return 0;
}

// One step up or down a ladder of allowed values; stays inside.
template <typename T, size_t N>
T step(const std::array<T, N>& ladder, T v, int dir) {
  int i = index_of(ladder, v) + dir;
  i = std::clamp(i, 0, static_cast<int>(N) - 1);
  return ladder[static_cast<size_t>(i)];
}

template <typename T, size_t N>
T pick(const std::array<T, N>& values, Rng& rng) {
  return values[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(N) - 1))];
}

// Picks an index with weights that favour the front of a table (small models are more common).
template <size_t N>
int pick_front(Rng& rng, double decay) {
  std::vector<double> w(N);
  for (size_t i = 0; i < N; ++i) w[i] = std::pow(decay, static_cast<double>(i));
  return static_cast<int>(rng.weighted(w));
}

}  // namespace

Expected expected_usage(const Args& a, double input_gib) {
  Expected e;
  switch (a.family) {
    case Family::kImageTraining: {
      const ImageModel& m = kImageModels[static_cast<size_t>(a.model)];
      const double pixels = std::pow(a.image_size / 224.0, 2.0);
      const double act = a.batch * m.act_gib_per_sample * pixels * (a.amp ? 0.55 : 1.0);
      e.vram_gib_per_gpu = 0.55 + m.params_m * 1e6 * 16.0 / kGiB + act;
      e.mem_gib = 3.0 + a.gpus * 1.5 + a.threads * (0.35 + a.batch * pixels * 0.0012);
      e.minutes = a.epochs * m.cost * pixels * 2.0 * (a.amp ? 0.6 : 1.0) / std::pow(a.gpus, 0.85);
      break;
    }
    case Family::kLlmFinetune: {
      const LlmModel& m = kLlmModels[static_cast<size_t>(a.model)];
      const double weights = m.params_b * 1e9 * 2.0 / kGiB;  // bf16
      const double states = a.lora ? m.params_b * 1e9 * 0.01 * 16.0 / kGiB
                                   : m.params_b * 1e9 * 14.0 / kGiB / a.gpus;  // FSDP-sharded
      const double act = a.batch * (a.seq_len / 1024.0) * m.act_gib_per_1k * (a.checkpointing ? 0.12 : 1.0);
      e.vram_gib_per_gpu = 0.8 + (a.lora ? weights : weights / a.gpus) + states + act;
      e.mem_gib = 6.0 + weights * (a.lora ? 1.1 : 1.6) + a.gpus * 2.5;
      e.minutes = 45.0 * std::pow(m.params_b, 0.8) * (a.seq_len / 1024.0) *
                  (a.checkpointing ? 1.3 : 1.0) * (a.lora ? 0.7 : 1.0) / std::pow(a.gpus, 0.85);
      break;
    }
    case Family::kAlignment: {
      const Reference& r = kReferences[static_cast<size_t>(a.model)];
      e.mem_gib = r.index_gib + a.threads * 0.3 + a.threads * (a.sort_mem_mib / 1024.0) * 1.05 +
                  0.02 * input_gib;
      e.minutes = 8.0 + input_gib * 25.0 / std::pow(a.threads, 0.8) * r.size_factor;
      break;
    }
    case Family::kMolecularDynamics: {
      const MdSystem& s = kMdSystems[static_cast<size_t>(a.model)];
      e.mem_gib = 0.5 + a.threads * 0.2 + s.atoms_m * 4.0 * (1.0 + a.threads / 128.0);
      e.minutes = 3.0 + a.nsteps_k * s.atoms_m * 0.6 / std::pow(a.threads / 16.0, 0.9);
      break;
    }
    case Family::kFeatureEtl: {
      e.mem_gib = 0.8 + input_gib * (a.polars ? 1.8 : 4.0) + a.threads * 0.1;
      e.minutes = 2.0 + input_gib * (a.polars ? 1.0 : 3.0) / std::sqrt(a.threads);
      break;
    }
  }
  return e;
}

double draw_input_gib(const Args& a, double day, Rng& rng) {
  switch (a.family) {
    case Family::kAlignment:
      return rng.lognormal(kAlignDatasets[static_cast<size_t>(a.dataset)].median_sample_gib, 0.5);
    case Family::kFeatureEtl: {
      const double base = kEtlDatasets[static_cast<size_t>(a.dataset)].gib_first_year;
      // Each year's file is 35% larger; files keep growing 0.4% a day (appended data).
      return base * std::pow(1.35, a.year) * (1.0 + 0.004 * std::max(0.0, day)) * rng.lognormal(1.0, 0.03);
    }
    default:
      return 0.0;
  }
}

Args sample_args(Family f, Rng& rng) {
  Args a;
  a.family = f;
  switch (f) {
    case Family::kImageTraining:
      a.model = pick_front<kImageModels.size()>(rng, 0.75);
      a.batch = pick(kImageBatches, rng);
      a.image_size = rng.bernoulli(0.6) ? 224 : pick(kImageSizes, rng);
      a.amp = rng.bernoulli(0.5);
      a.epochs = pick(kImageEpochs, rng);
      a.gpus = std::array<int, 3>{1, 2, 4}[rng.weighted({0.6, 0.25, 0.15})];
      a.threads = pick(kLoaderWorkers, rng);
      a.dataset = static_cast<int>(rng.uniform_int(0, kImageDatasets.size() - 1));
      break;
    case Family::kLlmFinetune:
      a.model = pick_front<kLlmModels.size()>(rng, 0.7);
      a.batch = pick(kMicroBatches, rng);
      a.seq_len = pick(kSeqLens, rng);
      a.lora = rng.bernoulli(0.65);
      a.checkpointing = rng.bernoulli(0.5);
      a.gpus = a.lora ? (rng.bernoulli(0.7) ? 1 : 2) : (rng.bernoulli(0.5) ? 4 : 8);
      a.dataset = static_cast<int>(rng.uniform_int(0, kLlmDatasets.size() - 1));
      break;
    case Family::kAlignment:
      a.model = static_cast<int>(rng.weighted({0.6, 0.3, 0.1}));
      a.threads = pick(kAlignThreads, rng);
      a.sort_mem_mib = pick(kSortMem, rng);
      a.dataset = static_cast<int>(rng.uniform_int(0, kAlignDatasets.size() - 1));
      break;
    case Family::kMolecularDynamics:
      a.model = static_cast<int>(rng.weighted({0.5, 0.35, 0.15}));
      a.threads = pick(kMdRanks, rng);
      a.nsteps_k = pick(kMdSteps, rng);
      break;
    case Family::kFeatureEtl:
      a.polars = rng.bernoulli(0.35);
      a.threads = pick(kEtlThreads, rng);
      a.dataset = static_cast<int>(rng.uniform_int(0, kEtlDatasets.size() - 1));
      a.year = static_cast<int>(rng.uniform_int(0, 3));
      break;
  }
  return a;
}

Args edit_args(const Args& a, Rng& rng) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    Args b = a;
    const int dir = rng.bernoulli(0.6) ? +1 : -1;  // people scale up more often than down
    switch (a.family) {
      case Family::kImageTraining:
        switch (rng.uniform_int(0, 4)) {
          case 0: case 1: b.batch = step(kImageBatches, a.batch, dir); break;
          case 2: b.model = std::clamp(a.model + dir, 0, static_cast<int>(kImageModels.size()) - 1); break;
          case 3: b.image_size = step(kImageSizes, a.image_size, dir); break;
          default: b.epochs = step(kImageEpochs, a.epochs, dir); b.amp = rng.bernoulli(0.5); break;
        }
        break;
      case Family::kLlmFinetune:
        switch (rng.uniform_int(0, 4)) {
          case 0: b.batch = step(kMicroBatches, a.batch, dir); break;
          case 1: b.seq_len = step(kSeqLens, a.seq_len, dir); break;
          case 2: b.model = std::clamp(a.model + dir, 0, static_cast<int>(kLlmModels.size()) - 1); break;
          case 3: b.checkpointing = !a.checkpointing; break;
          default: b.dataset = static_cast<int>(rng.uniform_int(0, kLlmDatasets.size() - 1)); break;
        }
        break;
      case Family::kAlignment:
        switch (rng.uniform_int(0, 2)) {
          case 0: b.threads = step(kAlignThreads, a.threads, dir); break;
          case 1: b.sort_mem_mib = step(kSortMem, a.sort_mem_mib, dir); break;
          default: b.dataset = static_cast<int>(rng.uniform_int(0, kAlignDatasets.size() - 1)); break;
        }
        break;
      case Family::kMolecularDynamics:
        switch (rng.uniform_int(0, 2)) {
          case 0: b.threads = step(kMdRanks, a.threads, dir); break;
          case 1: b.nsteps_k = step(kMdSteps, a.nsteps_k, dir); break;
          default: b.model = std::clamp(a.model + dir, 0, static_cast<int>(kMdSystems.size()) - 1); break;
        }
        break;
      case Family::kFeatureEtl:
        switch (rng.uniform_int(0, 2)) {
          case 0: b.year = std::clamp(a.year + 1, 0, 5); break;  // next year's file
          case 1: b.threads = step(kEtlThreads, a.threads, dir); break;
          default: b.polars = !a.polars; break;
        }
        break;
    }
    const bool changed = b.batch != a.batch || b.model != a.model || b.image_size != a.image_size ||
                         b.amp != a.amp || b.epochs != a.epochs || b.seq_len != a.seq_len ||
                         b.checkpointing != a.checkpointing || b.dataset != a.dataset ||
                         b.threads != a.threads || b.sort_mem_mib != a.sort_mem_mib ||
                         b.nsteps_k != a.nsteps_k || b.year != a.year || b.polars != a.polars;
    if (changed) return b;
  }
  Args b = a;  // every ladder was at its end: change a free argument
  b.dataset = a.dataset == 0 ? 1 : 0;
  return b;
}

Args sweep_next(const Args& a) {
  Args b = a;
  switch (a.family) {
    case Family::kImageTraining: b.batch = step(kImageBatches, a.batch, +1); break;
    case Family::kLlmFinetune: b.seq_len = step(kSeqLens, a.seq_len, +1); break;
    case Family::kAlignment: b.threads = step(kAlignThreads, a.threads, +1); break;
    case Family::kMolecularDynamics: b.threads = step(kMdRanks, a.threads, +1); break;
    case Family::kFeatureEtl: b.year = std::min(a.year + 1, 5); break;
  }
  return b;
}

double nice_mem_gib(double gib) {
  static constexpr std::array<double, 26> kSizes = {1,  2,   3,   4,   6,   8,   10,  12,  16,
                                                    20, 24,  32,  40,  48,  64,  80,  96,  128,
                                                    160, 192, 256, 320, 384, 512, 768, 1024};
  for (double s : kSizes) {
    if (gib <= s) return s;
  }
  return kSizes.back();
}

int64_t nice_time_s(double seconds) {
  static constexpr std::array<int64_t, 13> kLimits = {1800,  3600,   7200,   14400,  28800,
                                                      43200, 86400,  129600, 172800, 259200,
                                                      345600, 432000, 604800};
  for (int64_t l : kLimits) {
    if (seconds <= static_cast<double>(l)) return l;
  }
  return kLimits.back();
}

}  // namespace peakcast::synth
