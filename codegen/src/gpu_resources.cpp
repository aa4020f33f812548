#include "sextant/codegen/gpu_resources.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sys/wait.h>
#include <unistd.h>
#include <sstream>

#include "sextant/common/strings.h"

namespace sextant {

std::map<std::string, int64_t> GpuResources::toMap() const {
  std::map<std::string, int64_t> m{{"registers", registers}, {"spill_bytes", spill_bytes},
                                   {"stack_bytes", stack_bytes}, {"smem_bytes", smem_bytes}};
  if (sgprs >= 0) m["sgprs"] = sgprs;
  if (agprs >= 0) m["agprs"] = agprs;
  if (dynamic_smem_bytes > 0) m["dynamic_smem_bytes"] = dynamic_smem_bytes;
  return m;
}

namespace {

int runCapture(const std::string& cmd, std::string& out) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

bool executable(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec) && access(p.c_str(), X_OK) == 0;
}

}  // namespace

std::string findPtxas() {
  if (const char* e = std::getenv("SEXTANT_PTXAS")) return executable(e) ? e : "";
  if (const char* path = std::getenv("PATH"))
    for (const auto& dir : split(path, ':'))
      if (!dir.empty() && executable(std::filesystem::path(dir) / "ptxas")) return dir + "/ptxas";
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* e = std::getenv(var))
      if (executable(std::filesystem::path(e) / "bin/ptxas")) return std::string(e) + "/bin/ptxas";
  if (executable("/usr/local/cuda/bin/ptxas")) return "/usr/local/cuda/bin/ptxas";
  return "";
}

std::string ptxasVersion(const std::string& ptxas) {
  std::string out;
  if (runCapture(shellQuote(ptxas) + " --version", out) != 0) return "";
  std::smatch m;
  if (std::regex_search(out, m, std::regex("release ([0-9]+\\.[0-9]+)"))) return m[1];
  return "";
}

GpuResources parsePtxasOutput(const std::string& text) {
  GpuResources r;
  r.source = "ptxas";
  std::smatch m;
  if (std::regex_search(text, m, std::regex("Used ([0-9]+) registers"))) r.registers = std::stoll(m[1]);
  if (std::regex_search(text, m, std::regex("([0-9]+) bytes stack frame"))) r.stack_bytes = std::stoll(m[1]);
  int64_t spills = 0;
  if (std::regex_search(text, m, std::regex("([0-9]+) bytes spill stores"))) spills += std::stoll(m[1]);
  if (std::regex_search(text, m, std::regex("([0-9]+) bytes spill loads"))) spills += std::stoll(m[1]);
  r.spill_bytes = spills;
  r.smem_bytes = 0;
  if (std::regex_search(text, m, std::regex("([0-9]+) bytes smem"))) r.smem_bytes = std::stoll(m[1]);
  return r;
}

Result<GpuResources> runPtxas(const std::string& ptxas, const std::string& ptx_path, const std::string& arch,
                              const std::string& cubin_path) {
  std::string out;
  // A kernel built for the architecture-specific sm_90a (wgmma) assembles only as that.
  std::string target = arch;
  if (std::ifstream in(ptx_path); in) {  // the .target line is in the PTX header
    std::string head(4096, '\0');
    head.resize(size_t(in.read(head.data(), std::streamsize(head.size())).gcount()));
    std::smatch m;
    if (std::regex_search(head, m, std::regex("\\.target\\s+(sm_[0-9]+a)\\b")) && m[1].str() == arch + "a") target = m[1];
  }
  int rc = runCapture(shellQuote(ptxas) + " -v -arch=" + target + " " + shellQuote(ptx_path) + " -o " + shellQuote(cubin_path), out);
  if (rc != 0) return Error{"ptxas failed (exit " + std::to_string(rc) + "): " + out.substr(0, 2000)};
  GpuResources r = parsePtxasOutput(out);
  if (r.registers < 0) return Error{"ptxas -v printed no resource usage: " + out.substr(0, 500)};
  std::string v = ptxasVersion(ptxas);
  r.source = "ptxas" + (v.empty() ? std::string() : " " + v);
  return r;
}

int64_t ptxSharedBytes(const std::string& ptx) {
  int64_t total = 0;
  std::regex decl("\\.shared\\s+(?:\\.align\\s+[0-9]+\\s+)?\\.(?:b|u|s|f)([0-9]+)\\s+[A-Za-z_$][A-Za-z0-9_$]*((?:\\[[0-9]+\\])+)");
  for (auto it = std::sregex_iterator(ptx.begin(), ptx.end(), decl); it != std::sregex_iterator(); ++it) {
    int64_t n = std::stoll((*it)[1]) / 8;
    std::string dims = (*it)[2];
    std::regex d("\\[([0-9]+)\\]");
    for (auto j = std::sregex_iterator(dims.begin(), dims.end(), d); j != std::sregex_iterator(); ++j)
      n *= std::stoll((*j)[1]);
    total += n;
  }
  return total;
}

GpuResources fromAmdgpuMetadata(const std::map<std::string, int64_t>& md) {
  auto get = [&](const char* k) {
    auto it = md.find(k);
    return it == md.end() ? int64_t(0) : it->second;
  };
  GpuResources r;
  r.source = "amdgpu metadata";
  // For gfx90a and later, .vgpr_count is the unified total (ArchVGPRs + AccVGPRs).
  r.registers = get("vgpr_count");
  r.sgprs = get("sgpr_count");
  r.agprs = get("agpr_count");
  r.spill_bytes = get("vgpr_spill_count") + get("sgpr_spill_count");
  r.stack_bytes = get("private_segment_fixed_size");
  r.smem_bytes = get("group_segment_fixed_size");
  return r;
}

Preflight preflightCheck(const GpuTargetInfo& g, const GpuResources& r, int64_t threads) {
  Preflight p;
  const int64_t smem = std::max<int64_t>(0, r.smem_bytes) + r.dynamic_smem_bytes;
  p.occupancy = estimateOccupancy(g, threads, r.registers, smem);
  std::ostringstream why;
  if (threads > g.max_threads_per_block)
    why << threads << " threads per block > " << g.max_threads_per_block;
  else if (r.registers > g.max_regs_per_thread)
    why << r.registers << " registers per thread" << (r.agprs > 0 ? " (" + std::to_string(r.agprs) + " of them AGPRs)" : "")
        << " > " << g.max_regs_per_thread;
  else if (r.smem_bytes > g.smem_per_block_static_bytes)
    why << r.smem_bytes << " bytes of static shared memory > " << g.smem_per_block_static_bytes;
  else if (smem > g.smem_per_block_bytes)
    why << smem << " bytes of shared memory (" << r.dynamic_smem_bytes << " dynamic) > the " << g.smem_per_block_bytes
        << " a block may opt in to";
  else if (p.occupancy.blocks_per_cu == 0)
    why << "no block fits on a " << (g.target.kind == TargetKind::Amd ? "CU" : "SM") << " (" << p.occupancy.limiter
        << ")";
  p.reason = why.str();
  p.ok = p.reason.empty();
  return p;
}

}  // namespace sextant
