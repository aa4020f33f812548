#include "sextant/hwspec/target.h"
#include "sextant/hwspec/gpu_target.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <cerrno>
#include <cstring>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "sextant/common/strings.h"

namespace sextant {

bool HostCpu::hasFlag(const std::string& f) const {
  return std::find(flags.begin(), flags.end(), f) != flags.end();
}

bool hasAmxBf16(const HostCpu& cpu) { return cpu.hasFlag("amx_tile") && cpu.hasFlag("amx_bf16"); }

Status requestAmxPermission() {
#if defined(__linux__) && defined(__x86_64__)
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0) return okStatus();
  return Error{std::string("Linux refused the AMX tile-data permission (arch_prctl ARCH_REQ_XCOMP_PERM): ") +
               std::strerror(errno)};
#else
  return Error{"AMX needs Linux on x86-64"};
#endif
}

bool splitsWideVectors(const HostCpu& cpu) {
  return cpu.vendor == "AuthenticAMD" && cpu.family == 0x19 && cpu.hasFlag("avx512f");
}

int64_t HostCpu::lastLevelCacheBytes() const {
  if (l3_bytes) return l3_bytes;
  if (l2_bytes) return l2_bytes;
  return 32ll << 20;
}

static std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  size_t e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

HostCpu parseCpuInfo(const std::string& text) {
  HostCpu cpu;
  std::istringstream in(text);
  std::string line;
  int processors = 0;
  bool first = true;
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) {
      if (trim(line).empty() && processors > 0) first = false;
      continue;
    }
    std::string key = trim(line.substr(0, colon));
    std::string val = trim(line.substr(colon + 1));
    if (key == "processor") ++processors;
    if (!first) continue;
    if (key == "model name") cpu.model = val;
    else if (key == "vendor_id") cpu.vendor = val;
    else if (key == "cpu family") cpu.family = std::atoi(val.c_str());
    else if (key == "model") cpu.model_number = std::atoi(val.c_str());
    else if (key == "cpu MHz") cpu.mhz = std::atof(val.c_str());
    else if (key == "flags") {
      std::istringstream fs(val);
      std::string f;
      while (fs >> f) cpu.flags.push_back(f);
    }
  }
  cpu.logical_cores = std::max(1, processors);
  if (cpu.hasFlag("avx512f")) {
    cpu.vector_isa = "avx512";
    cpu.vector_bits = 512;
    cpu.vector_registers = 32;
  } else if (cpu.hasFlag("avx2") && cpu.hasFlag("fma")) {
    cpu.vector_isa = "avx2";
    cpu.vector_bits = 256;
    cpu.vector_registers = 16;
  } else {
    cpu.vector_isa = "sse";
    cpu.vector_bits = 128;
    cpu.vector_registers = 16;
  }
  return cpu;
}

std::string machineKey(const HostCpu& cpu, const std::string& llvm_cpu) {
  auto field = [](std::string s) {
    for (char& c : s)
      if (c == ':' || c == ' ') c = '-';
    return s.empty() ? std::string("?") : s;
  };
  return "cpu:" + field(llvm_cpu) + ":" + field(cpu.vector_isa) + ":" + field(cpu.vendor) + "-" +
         std::to_string(cpu.family) + "-" + std::to_string(cpu.model_number) + ":" +
         std::to_string(cpu.logical_cores) + "c";
}

std::string describeMachineKey(const std::string& key) {
  std::vector<std::string> f;
  size_t start = 0;
  for (;;) {
    size_t c = key.find(':', start);
    f.push_back(key.substr(start, c == std::string::npos ? std::string::npos : c - start));
    if (c == std::string::npos) break;
    start = c + 1;
  }
  if (key == "none") return "not measured (predicted or compiled only)";
  if (key == "unknown") return "a machine nothing in the record names";
  if (f.size() >= 2 && f[0] == "gpu") return "GPU " + key.substr(4);
  if (f.size() == 4 && f[0] == "cpu" && f[3] == "?")
    return "CPU " + f[1] + " (" + f[2] + "), family, model and cores unknown (a record from before schema 4)";
  if (f.size() == 5 && f[0] == "cpu")
    return "CPU " + f[1] + " (" + f[2] + "), " + f[3] + ", " + f[4].substr(0, f[4].size() - 1) + " logical cores";
  return key;
}

static int64_t readCacheSize(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  if (!(f >> s) || s.empty()) return 0;
  int64_t mult = 1;
  char last = s.back();
  if (last == 'K') mult = 1024, s.pop_back();
  else if (last == 'M') mult = 1024 * 1024, s.pop_back();
  int64_t v = 0;
  if (!parseInt64(s, v)) return 0;
  return v * mult;
}

#if defined(__x86_64__) || defined(__i386__)
// Cache sizes from CPUID when sysfs has none (VMs): the deterministic cache parameters (leaf 4 on
// Intel, 0x8000001D on AMD: ways x partitions x line x sets), else AMD's legacy leaves
// 0x80000005 (L1d KiB in ECX[31:24]) and 0x80000006 (L2 KiB in ECX[31:16], L3 in 512 KiB units
// in EDX[31:18]). A hypervisor may report the whole socket's L3 there.
static void cpuidCaches(HostCpu& c) {
  unsigned a = 0, b = 0, cx = 0, d = 0;
  __cpuid(0x80000000, a, b, cx, d);
  const unsigned max_ext = a;
  for (unsigned leaf : {4u, 0x8000001Du}) {
    if (leaf > 0x80000000u && max_ext < leaf) continue;
    for (unsigned i = 0; i < 8; ++i) {
      __cpuid_count(leaf, i, a, b, cx, d);
      const unsigned type = a & 31, level = (a >> 5) & 7;
      if (type == 0) break;
      const int64_t size = int64_t((b >> 22) + 1) * (((b >> 12) & 1023) + 1) * ((b & 4095) + 1) * (int64_t(cx) + 1);
      if (level == 1 && type == 1 && !c.l1d_bytes) c.l1d_bytes = size;
      if (level == 2 && !c.l2_bytes) c.l2_bytes = size;
      if (level == 3 && !c.l3_bytes) c.l3_bytes = size;
    }
  }
  if (max_ext >= 0x80000006u && (!c.l1d_bytes || !c.l2_bytes || !c.l3_bytes)) {
    __cpuid(0x80000005, a, b, cx, d);
    if (!c.l1d_bytes) c.l1d_bytes = int64_t(cx >> 24) << 10;
    __cpuid(0x80000006, a, b, cx, d);
    if (!c.l2_bytes) c.l2_bytes = int64_t(cx >> 16) << 10;
    if (!c.l3_bytes) c.l3_bytes = int64_t(d >> 18) * (512 << 10);
  }
}
#endif

const HostCpu& hostCpu() {
  static const HostCpu cpu = [] {
    std::ifstream f("/proc/cpuinfo");
    std::stringstream ss;
    ss << f.rdbuf();
    HostCpu c = parseCpuInfo(ss.str());
    for (int i = 0; i < 8; ++i) {
      std::string base = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
      std::ifstream lv(base + "level"), ty(base + "type");
      int level = 0;
      std::string type;
      if (!(lv >> level) || !(ty >> type)) continue;
      int64_t size = readCacheSize(base + "size");
      if (level == 1 && type == "Data") c.l1d_bytes = size;
      if (level == 2) c.l2_bytes = size;
      if (level == 3) c.l3_bytes = size;
    }
    c.cache_source = c.l1d_bytes ? "sysfs" : "";
#if defined(__x86_64__) || defined(__i386__)
    if (!c.l1d_bytes || !c.l2_bytes) {
      cpuidCaches(c);
      if (c.l1d_bytes) c.cache_source = "cpuid";
    }
#endif
    return c;
  }();
  return cpu;
}

std::string Target::key() const { return name + ":" + arch; }

std::string cpuArchWithThreads(const std::string& arch, int threads) {
  return threads > 1 ? arch + "-t" + std::to_string(threads) : arch;
}

int cpuArchThreads(const std::string& arch) {
  const size_t at = arch.rfind("-t");
  if (at == std::string::npos) return 1;
  int n = 1;
  const char *first = arch.data() + at + 2, *last = arch.data() + arch.size();
  auto [end, ec] = std::from_chars(first, last, n);
  return ec == std::errc() && end == last && n > 1 ? n : 1;
}

Result<Target> targetWithThreads(const Target& t, int threads) {
  if (threads == 1) return t;
  if (t.isGpu() || threads < 1) return Error{"--threads is for the cpu target, 1 or more"};
  Target out = t;
  out.arch = cpuArchWithThreads(t.arch, threads);
  return out;
}

std::vector<std::string> knownTargetNames() {
  return {"cpu", "h100", "h200", "a100", "sm_80", "sm_90", "mi300", "mi300x", "gfx942", "vulkan"};
}

Result<Target> resolveTarget(const std::string& raw) {
  std::string name = raw;
  std::transform(name.begin(), name.end(), name.begin(), ::tolower);
  if (name == "cpu" || name == "host") {
    const HostCpu& cpu = hostCpu();
    return Target{"cpu", TargetKind::Cpu, "x86_64-" + cpu.vector_isa, ""};
  }
  // GPU targets: canonical name, architecture, and the device-table entry whose limits apply.
  // The key (name:arch) is what the database stores, so aliases share records.
  if (name == "h100" || name == "sm_90" || name == "h100-sxm") return Target{"h100", TargetKind::Nvidia, "sm_90", "h100-sxm"};
  if (name == "h200") return Target{"h200", TargetKind::Nvidia, "sm_90", "h200"};
  if (name == "a100" || name == "sm_80" || name == "a100-80gb") return Target{"a100", TargetKind::Nvidia, "sm_80", "a100-80gb"};
  if (name == "mi300" || name == "mi300x" || name == "gfx942") return Target{"mi300", TargetKind::Amd, "gfx942", "mi300x"};
  if (name == "vulkan") return Target{"vulkan", TargetKind::Vulkan, "spirv1.3", "0"};
  if (name.rfind("vulkan:", 0) == 0) {
    const std::string n = name.substr(7);
    if (n.empty() || n.size() > 3 || n.find_first_not_of("0123456789") != std::string::npos)
      return Error{"target '" + raw + "': expected vulkan:N, N the index of a Vulkan device (tune hw show vulkan lists them)"};
    return Target{"vulkan", TargetKind::Vulkan, "spirv1.3", std::to_string(std::stoi(n))};
  }
  auto known = knownTargetNames();
  return Error{"unknown target '" + raw + "' (known: " + join(known, ", ") + ", vulkan:N)"};
}

// In this library (not with the device table): tune-runner, built alone, names device classes too.
std::string vulkanDeviceClass(uint32_t vendor_id, const std::string& device_type) {
  // A CPU implementation first (lavapipe reports Mesa, SwiftShader Google): IREE gives them its fallback.
  if (device_type == "cpu") return "cpu";
  switch (vendor_id) {
    case 0x10DE: return "nvidia";
    case 0x1002: return "amd";
    case 0x13B5: return "mali";    // ARM
    case 0x5143: return "adreno";  // Qualcomm
    case 0x106B: return "apple";
    default: return "other";       // Intel (0x8086), ImgTec, Broadcom, ...: IREE's fallback
  }
}

}  // namespace sextant
