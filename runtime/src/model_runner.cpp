// runModel: a compiled model called through its C entry point, timed, in an isolated child.
#include "sextant/runtime/model_runner.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "sextant/runtime/isolation.h"

namespace sextant {

namespace {

// A memref descriptor of any rank: {allocated, aligned, offset, sizes[rank], strides[rank]}.
std::vector<int64_t> descriptor(float* data, const std::vector<int64_t>& shape) {
  std::vector<int64_t> d(3 + 2 * shape.size());
  d[0] = d[1] = int64_t(reinterpret_cast<intptr_t>(data));
  d[2] = 0;
  int64_t stride = 1;
  for (int i = int(shape.size()) - 1; i >= 0; --i) {
    d[3 + size_t(i)] = shape[size_t(i)];
    d[3 + shape.size() + size_t(i)] = stride;
    stride *= shape[size_t(i)];
  }
  return d;
}

using P = void*;
// The entry point with n descriptor pointers.
bool call(void* fn, std::vector<P>& a) {
  switch (a.size()) {
    case 1: reinterpret_cast<void (*)(P)>(fn)(a[0]); return true;
    case 2: reinterpret_cast<void (*)(P, P)>(fn)(a[0], a[1]); return true;
    case 3: reinterpret_cast<void (*)(P, P, P)>(fn)(a[0], a[1], a[2]); return true;
    case 4: reinterpret_cast<void (*)(P, P, P, P)>(fn)(a[0], a[1], a[2], a[3]); return true;
    case 5: reinterpret_cast<void (*)(P, P, P, P, P)>(fn)(a[0], a[1], a[2], a[3], a[4]); return true;
    case 6: reinterpret_cast<void (*)(P, P, P, P, P, P)>(fn)(a[0], a[1], a[2], a[3], a[4], a[5]); return true;
    case 7: reinterpret_cast<void (*)(P, P, P, P, P, P, P)>(fn)(a[0], a[1], a[2], a[3], a[4], a[5], a[6]); return true;
    case 8:
      reinterpret_cast<void (*)(P, P, P, P, P, P, P, P)>(fn)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]);
      return true;
    default: return false;
  }
}

int64_t count(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// In the child: load, call, time; the result as JSON (or "error: ...").
std::string runInChild(const ModelRunRequest& r, const std::string& outputs_path) {
  bindOpenMpThreads();
  void* h = dlopen(r.so_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) return std::string("error: cannot load the model: ") + dlerror();
  void* fn = dlsym(h, r.entry.c_str());
  if (!fn) return "error: the model has no " + r.entry;
  std::vector<std::vector<float>> bufs;
  std::mt19937_64 rng(r.seed);
  std::uniform_real_distribution<float> u(-1, 1);
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    if (i < r.input_data.size()) {
      if (int64_t(r.input_data[i].size()) != count(r.inputs[i])) return "error: input " + std::to_string(i) + " has the wrong size";
      bufs.push_back(r.input_data[i]);
    } else {
      std::vector<float> v(size_t(count(r.inputs[i])));
      for (float& x : v) x = u(rng);
      bufs.push_back(std::move(v));
    }
  }
  for (const auto& s : r.outputs) bufs.emplace_back(size_t(count(s)), NAN);
  std::vector<std::vector<int64_t>> descs;
  std::vector<P> args;
  for (size_t i = 0; i < bufs.size(); ++i)
    descs.push_back(descriptor(bufs[i].data(), i < r.inputs.size() ? r.inputs[i] : r.outputs[i - r.inputs.size()]));
  for (auto& d : descs) args.push_back(d.data());
  if (args.empty()) return "error: " + r.entry + " takes no memref arguments to call it with";
  if (!call(fn, args)) return "error: models with more than 8 inputs and outputs together are not supported yet";
  nlohmann::json out;
  std::vector<double> sums;
  double err = -1, big = 0;
  for (size_t o = 0; o < r.outputs.size(); ++o) {
    const auto& y = bufs[r.inputs.size() + o];
    double s = 0;
    for (float x : y) s += x;
    sums.push_back(s);
    if (o < r.expected.size()) {
      if (r.expected[o].size() != y.size()) return "error: expected output " + std::to_string(o) + " has the wrong size";
      err = std::max(err, 0.0);
      for (size_t i = 0; i < y.size(); ++i) {
        const double e = std::fabs(double(y[i]) - double(r.expected[o][i]));
        err = std::isnan(e) ? INFINITY : std::max(err, e);
        big = std::max(big, std::fabs(double(r.expected[o][i])));
      }
    }
  }
  using ProfileReset = void (*)();
  using ProfileRead = int64_t (*)(double*, int64_t*, int64_t);
  auto reset = reinterpret_cast<ProfileReset>(dlsym(h, "sextant_profile_reset"));
  auto read = reinterpret_cast<ProfileRead>(dlsym(h, "sextant_profile_read"));
  if (r.profile && (!reset || !read))
    return "error: the model has no per-op clock (compile it with --profile)";
  if (r.profile) reset();
  std::vector<double> times;
  const auto start = std::chrono::steady_clock::now();
  while (int(times.size()) < r.min_calls ||
         std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < r.min_time_s) {
    const auto t0 = std::chrono::steady_clock::now();
    call(fn, args);
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (times.size() >= 100000) break;
  }
  out["times"] = times;
  if (r.profile) {
    const int64_t n = read(nullptr, nullptr, 0);
    std::vector<double> op_sums(size_t(std::max<int64_t>(n, 0)));
    read(op_sums.data(), nullptr, n);
    for (double& x : op_sums) x /= double(times.size());
    out["op_s"] = op_sums;
  }
  out["sums"] = sums;
  out["max_abs_error"] = err;
  out["max_abs_expected"] = big;
  if (!outputs_path.empty()) {  // too large for the pipe's text: a file the parent reads
    std::ofstream f(outputs_path, std::ios::binary);
    for (size_t o = 0; o < r.outputs.size(); ++o)
      f.write(reinterpret_cast<const char*>(bufs[r.inputs.size() + o].data()),
              std::streamsize(bufs[r.inputs.size() + o].size() * sizeof(float)));
    if (!f) return "error: cannot write the outputs to " + outputs_path;
  }
  return out.dump();
}

}  // namespace

Result<ModelRunResult> runModel(const ModelRunRequest& r) {
  MachineLock lock(MachineLock::Mode::Measure);
  static int calls = 0;
  const std::string outputs_path =
      r.return_outputs ? (std::filesystem::temp_directory_path() /
                          ("sextant-model-outputs-" + std::to_string(getpid()) + "-" + std::to_string(calls++) + ".f32"))
                             .string()
                       : std::string();
  ChildOutcome c = runIsolated([&] { return runInChild(r, outputs_path); }, r.timeout_s);
  if (!c.finished()) {
    std::string err = c.stderr_text;
    if (err.size() > 400) err = err.substr(0, 400) + "...";
    return Error{"the compiled model " + c.describe() + (err.empty() ? "" : ": " + err)};
  }
  if (c.output.rfind("error: ", 0) == 0) return Error{c.output.substr(7)};
  auto j = nlohmann::json::parse(c.output, nullptr, false);
  if (j.is_discarded()) return Error{"the model runner returned no result"};
  ModelRunResult res;
  res.times_s = j["times"].get<std::vector<double>>();
  res.output_checksums = j["sums"].get<std::vector<double>>();
  res.max_abs_error = j["max_abs_error"].get<double>();
  res.max_abs_expected = j["max_abs_expected"].get<double>();
  if (j.contains("op_s")) res.op_s = j["op_s"].get<std::vector<double>>();
  if (!outputs_path.empty()) {
    auto all = readF32File(outputs_path);
    std::filesystem::remove(outputs_path);
    if (!all) return Error{all.error()};
    size_t at = 0;
    for (const auto& shape : r.outputs) {
      const size_t n = size_t(count(shape));
      if (at + n > all->size()) return Error{"the model runner wrote too few outputs"};
      res.outputs.emplace_back(all->begin() + long(at), all->begin() + long(at + n));
      at += n;
    }
  }
  std::vector<double> t = res.times_s;
  std::sort(t.begin(), t.end());
  res.median_s = t.empty() ? 0 : t[t.size() / 2];
  res.min_s = t.empty() ? 0 : t.front();
  return res;
}

Result<std::vector<float>> readF32File(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) return Error{path + ": cannot read the file"};
  const auto size = f.tellg();
  if (size % 4) return Error{path + ": not a file of f32 values (its size is not a multiple of 4)"};
  std::vector<float> v(size_t(size) / 4);
  f.seekg(0);
  f.read(reinterpret_cast<char*>(v.data()), size);
  return v;
}

}  // namespace sextant
