// One cost model across workloads and machines (issue #11): training samples from recorded
// datasets (each workload its own ranking group, its features computed for the CPU that measured
// it), a pretrained model trained on them, and its provenance. MLIR-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sextant/common/result.h"
#include "sextant/costmodel/model.h"
#include "sextant/search/replay.h"
#include "sextant/search/strategy.h"

namespace sextant {

struct TransferOptions {
  size_t max_per_workload = 2000;  // records per workload (a uniform subsample beyond)
  int epochs = 300;
  uint64_t seed = 1;
  std::string host_llvm_cpu;       // this machine's LLVM CPU name: records of a CPU the table of
                                   // cpuOfRecords does not know use hostCpu() when it is this one
  bool fastest_call = false;       // labels: the records' median gflops (true: learnedThroughput)
};

// Samples for the CPU cost model from every workload of `data` (group = its index in `data`).
std::vector<Sample> cpuTransferSamples(const std::vector<const ReplayWorkload*>& data, const TransferOptions& o);

// A cost model trained on them, feature version kCpuFeatureVersion.
CostModel trainCpuModel(const std::vector<const ReplayWorkload*>& data, const TransferOptions& o);

// "workload key @ device" of a replay workload.
std::string replayName(const ReplayWorkload& w);

// Leave-one-workload-out: every workload of `all` except the held-out one's workload key on any
// machine (the same shape measured on another CPU would leak it), nor a convolution's implicit GEMM
// when a convolution is held out (or the other way round); with `other_machines_only`,
// only workloads measured on another device than the held-out one (the cross-CPU variant).
std::vector<const ReplayWorkload*> leaveOneOut(const std::vector<const ReplayWorkload*>& all, const ReplayWorkload& held,
                                               bool other_machines_only);

// Glimpse's prior from recorded workloads: each successful candidate's knobs and its throughput
// relative to the best of its workload.
std::vector<PriorRecord> priorFromReplay(const std::vector<const ReplayWorkload*>& data);

// Glimpse's prior shipped beside a pretrained model (MODEL.prior.json, written by `tune costmodel
// train`): the records within 10% of their workload's best (the only ones the prior counts), with
// the device that measured each, so that a fresh database still has a prior. A loaded record
// weighs 1 when its device is `host_device` (this machine's LLVM CPU), 0.5 otherwise, as records
// of other CPUs in a database do. A file that is not such a prior is refused with one line naming
// it.
inline std::string priorPathOf(const std::string& model_path) { return model_path + ".prior.json"; }
Status savePrior(const std::string& path, const std::vector<const ReplayWorkload*>& data);
Result<std::vector<PriorRecord>> loadPrior(const std::string& path, const std::string& host_device);

}  // namespace sextant
