#include "sextant/hwspec/target.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "sextant/common/strings.h"

namespace sextant {

bool HostCpu::hasFlag(const std::string& f) const {
  return std::find(flags.begin(), flags.end(), f) != flags.end();
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
    return c;
  }();
  return cpu;
}

std::string Target::key() const { return name + ":" + arch; }

std::vector<std::string> knownTargetNames() {
  return {"cpu", "h100", "h200", "a100", "sm_80", "sm_90", "mi300", "mi300x", "gfx942"};
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
  auto known = knownTargetNames();
  return Error{"unknown target '" + raw + "' (known: " + join(known, ", ") + ")"};
}

}  // namespace sextant
