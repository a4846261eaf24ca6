// Constants of the script families (docs/synth.md lists them with the formulas).
#pragma once

#include <array>
#include <string_view>

namespace peakcast::synth {

struct ImageModel {
  std::string_view name;
  double params_m;            // parameters, millions
  double act_gib_per_sample;  // activation memory per sample at 224x224, fp32
  double cost;                // minutes per epoch at 224, one GPU, fp32
};
inline constexpr std::array<ImageModel, 6> kImageModels = {{
    {"resnet18", 11.7, 0.030, 0.5},
    {"resnet50", 25.6, 0.085, 1.0},
    {"convnext_tiny", 28.6, 0.110, 1.2},
    {"efficientnet_b3", 12.2, 0.130, 1.3},
    {"vit_base_patch16_224", 86.6, 0.120, 1.8},
    {"vit_large_patch16_224", 304.0, 0.330, 5.0},
}};
inline constexpr std::array<int, 6> kImageBatches = {16, 32, 64, 128, 256, 512};
inline constexpr std::array<int, 4> kImageSizes = {160, 224, 288, 384};
inline constexpr std::array<int, 4> kImageEpochs = {10, 30, 90, 200};
inline constexpr std::array<int, 3> kLoaderWorkers = {4, 8, 16};
inline constexpr std::array<std::string_view, 4> kImageDatasets = {"imagenet-1k", "inat2021",
                                                                   "places365", "cifar100-up"};

struct LlmModel {
  std::string_view name;
  double params_b;          // parameters, billions
  double act_gib_per_1k;    // activation memory per sample of 1024 tokens, no checkpointing
};
inline constexpr std::array<LlmModel, 4> kLlmModels = {{
    {"meta-llama/Llama-3.2-1B", 1.24, 1.0},
    {"meta-llama/Llama-3.2-3B", 3.21, 2.2},
    {"meta-llama/Llama-3.1-8B", 8.03, 4.0},
    {"meta-llama/Llama-2-13b-hf", 13.0, 6.0},
}};
inline constexpr std::array<int, 4> kMicroBatches = {1, 2, 4, 8};
inline constexpr std::array<int, 4> kSeqLens = {512, 1024, 2048, 4096};
inline constexpr std::array<std::string_view, 3> kLlmDatasets = {"alpaca-cleaned", "dolly-15k",
                                                                 "lab-notes-v2"};

struct Reference {
  std::string_view name;
  double index_gib;    // bwa index resident in memory
  double size_factor;  // runtime scale
};
inline constexpr std::array<Reference, 3> kReferences = {{
    {"GRCh38", 5.4, 1.0},
    {"GRCm39", 5.0, 0.95},
    {"dm6", 0.3, 0.2},
}};
inline constexpr std::array<int, 4> kAlignThreads = {4, 8, 16, 32};
inline constexpr std::array<int, 4> kSortMem = {768, 1024, 2048, 4096};
struct AlignDataset {
  std::string_view name;
  double median_sample_gib;  // compressed FASTQ pair per sample
};
inline constexpr std::array<AlignDataset, 3> kAlignDatasets = {{
    {"wgs_cohort", 30.0}, {"exome_batch", 6.0}, {"rnaseq_timecourse", 3.0}}};

struct MdSystem {
  std::string_view name;
  double atoms_m;  // millions of atoms
};
inline constexpr std::array<MdSystem, 3> kMdSystems = {{
    {"lysozyme", 0.04}, {"membrane_patch", 0.25}, {"capsid", 1.5}}};
inline constexpr std::array<int, 4> kMdRanks = {8, 16, 32, 64};
inline constexpr std::array<int, 5> kMdSteps = {50, 250, 500, 1000, 2500};

inline constexpr std::array<int, 4> kEtlThreads = {2, 4, 8, 16};
struct EtlDataset {
  std::string_view name;
  double gib_first_year;  // parquet size of year index 0
};
inline constexpr std::array<EtlDataset, 3> kEtlDatasets = {{
    {"sensor_events", 2.0}, {"claims", 6.0}, {"clickstream", 12.0}}};

}  // namespace peakcast::synth
