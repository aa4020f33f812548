#include "sextant/runtime/bundle.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <unistd.h>

#include "sextant/codegen/workload.h"

namespace sextant {

using nlohmann::json;
namespace fs = std::filesystem;

const char* kernelFormatName(KernelFormat f) {
  return f == KernelFormat::Ptx ? "ptx" : f == KernelFormat::Cubin ? "cubin" : f == KernelFormat::Hsaco ? "hsaco" : "spirv";
}

Result<KernelFormat> parseKernelFormat(const std::string& s) {
  if (s == "ptx") return KernelFormat::Ptx;
  if (s == "cubin") return KernelFormat::Cubin;
  if (s == "hsaco") return KernelFormat::Hsaco;
  if (s == "spirv") return KernelFormat::Spirv;
  return Error{"unknown kernel format '" + s + "' (known: ptx, cubin, hsaco, spirv)"};
}

namespace {

// Validation failures travel as this exception inside this file only; the public functions turn
// it into an Error naming the file.
struct Invalid {
  std::string message;
};

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw Invalid{where.empty() ? what : where + ": " + what};
}

std::string sub(const std::string& where, const std::string& key) { return where.empty() ? key : where + "." + key; }

const json& field(const json& o, const std::string& key, const std::string& where) {
  if (!o.is_object()) fail(where, "expected an object");
  auto it = o.find(key);
  if (it == o.end()) fail(where, "missing field '" + key + "'");
  return *it;
}

std::string getString(const json& o, const std::string& key, const std::string& where) {
  const json& v = field(o, key, where);
  if (!v.is_string()) fail(sub(where, key), std::string("expected a string, got ") + v.type_name());
  return v.get<std::string>();
}

int64_t getInt(const json& o, const std::string& key, const std::string& where) {
  const json& v = field(o, key, where);
  if (!v.is_number_integer()) fail(sub(where, key), std::string("expected an integer, got ") + v.type_name());
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)) fail(sub(where, key), "integer out of range");
  return v.get<int64_t>();
}

double getNumber(const json& o, const std::string& key, const std::string& where) {
  const json& v = field(o, key, where);
  if (!v.is_number()) fail(sub(where, key), std::string("expected a number, got ") + v.type_name());
  return v.get<double>();
}

const json& getArray(const json& o, const std::string& key, const std::string& where) {
  const json& v = field(o, key, where);
  if (!v.is_array()) fail(sub(where, key), std::string("expected an array, got ") + v.type_name());
  return v;
}

const json& getObject(const json& o, const std::string& key, const std::string& where) {
  const json& v = field(o, key, where);
  if (!v.is_object()) fail(sub(where, key), std::string("expected an object, got ") + v.type_name());
  return v;
}

std::string indexed(const std::string& key, size_t i) { return key + "[" + std::to_string(i) + "]"; }

void checkHeader(const json& j, const char* format, int version) {
  if (!j.is_object()) fail("", std::string("expected a JSON object, got ") + j.type_name());
  std::string f = getString(j, "format", "");
  if (f != format) fail("", "unknown format '" + f + "' (expected '" + format + "')");
  int64_t v = getInt(j, "version", "");
  if (v != version)
    fail("", "unsupported version " + std::to_string(v) + " (this runner reads version " + std::to_string(version) + ")");
}

std::array<uint32_t, 3> getDims(const json& o, const std::string& key, const std::string& where) {
  const json& v = getArray(o, key, where);
  std::array<uint32_t, 3> d{};
  bool ok = v.size() == 3;
  for (size_t i = 0; ok && i < 3; ++i) {
    ok = v[i].is_number_integer() && v[i].get<int64_t>() >= 1 && v[i].get<int64_t>() <= int64_t(UINT32_MAX);
    if (ok) d[i] = uint32_t(v[i].get<int64_t>());
  }
  if (!ok) fail(sub(where, key), "expected an array of 3 positive integers, got " + v.dump());
  return d;
}

bool validId(const std::string& id) {
  if (id.empty() || id.size() > 200) return false;
  for (unsigned char c : id)
    if (c <= ' ' || c == ',' || c >= 127) return false;
  return true;
}

bool validRelativePath(const std::string& p) {
  if (p.empty() || p[0] == '/') return false;
  for (const auto& part : fs::path(p))
    if (part == "..") return false;
  return true;
}

bool validArch(const std::string& vendor, const std::string& arch) {
  if (vendor == "nvidia") {
    if (arch.size() < 5 || arch.compare(0, 3, "sm_") != 0) return false;
    size_t i = 3;
    while (i < arch.size() && isdigit((unsigned char)arch[i])) ++i;
    if (i - 3 < 2) return false;
    return i == arch.size() || (i + 1 == arch.size() && (arch[i] == 'a' || arch[i] == 'f'));
  }
  if (vendor == "vulkan") return arch.rfind("spirv1.", 0) == 0;
  return arch.size() > 3 && arch.compare(0, 3, "gfx") == 0;
}

double finite(double x) { return std::isnan(x) ? 0.0 : std::isinf(x) ? (x > 0 ? 1e300 : -1e300) : x; }

json argToJson(const KernelArg& a) {
  switch (a.kind) {
    case KernelArg::Kind::TensorMap:
      return json{{"tensor_map",
                   {{"buffer", std::string(1, a.tmap.buffer)}, {"elem", a.tmap.elem}, {"dims", a.tmap.dims},
                    {"stride_bytes", a.tmap.stride_bytes}, {"box", a.tmap.box}, {"swizzle", a.tmap.swizzle}}}};
    case KernelArg::Kind::Buffer: return json{{"buffer", std::string(1, a.buffer)}};
    case KernelArg::Kind::I32: return json{{"i32", a.value}};
    case KernelArg::Kind::I64: return json{{"i64", a.value}};
  }
  return json();
}

KernelArg argFromJson(const json& a, const std::string& where) {
  if (!a.is_object() || a.size() != 1)
    fail(where, "expected an object with one of 'buffer', 'i32', 'i64', 'tensor_map', got " + a.dump());
  if (a.contains("tensor_map")) {
    const std::string w = sub(where, "tensor_map");
    const json& t = getObject(a, "tensor_map", where);
    TensorMapSpec m;
    std::string b = getString(t, "buffer", w);
    if (b != "A" && b != "B") fail(sub(w, "buffer"), "expected \"A\" or \"B\", got \"" + b + "\"");
    m.buffer = b[0];
    m.elem = getString(t, "elem", w);
    if (m.elem != "f16" && m.elem != "bf16") fail(sub(w, "elem"), "expected f16 or bf16, got " + m.elem);
    for (const char* key : {"dims", "box"}) {
      const json& arr = getArray(t, key, w);
      if (arr.size() != 2 || !arr[0].is_number_integer() || !arr[1].is_number_integer() || arr[0].get<int64_t>() <= 0 ||
          arr[1].get<int64_t>() <= 0)
        fail(sub(w, key), "expected two positive integers");
      // An explicit array: GCC 13 (the GPU machines' compiler) rejects a braced list assigned through ?:.
      const std::array<int64_t, 2> v{arr[0].get<int64_t>(), arr[1].get<int64_t>()};
      (std::string(key) == "dims" ? m.dims : m.box) = v;
    }
    m.stride_bytes = getInt(t, "stride_bytes", w);
    m.swizzle = getInt(t, "swizzle", w);
    if (m.stride_bytes <= 0 || m.stride_bytes % 16) fail(sub(w, "stride_bytes"), "expected a positive multiple of 16");
    if (m.swizzle != 0 && m.swizzle != 32 && m.swizzle != 64 && m.swizzle != 128)
      fail(sub(w, "swizzle"), "expected 0, 32, 64 or 128");
    return KernelArg::tensorMap(m);
  }
  if (a.contains("buffer")) {
    std::string b = getString(a, "buffer", where);
    if (b != "A" && b != "B" && b != "C") fail(sub(where, "buffer"), "expected \"A\", \"B\" or \"C\", got \"" + b + "\"");
    return KernelArg::buf(b[0]);
  }
  if (a.contains("i32")) {
    int64_t v = getInt(a, "i32", where);
    if (v < INT32_MIN || v > INT32_MAX) fail(sub(where, "i32"), "value out of the 32-bit range");
    return KernelArg::i32(int32_t(v));
  }
  if (a.contains("i64")) return KernelArg::i64(getInt(a, "i64", where));
  fail(where, "expected an object with one of 'buffer', 'i32', 'i64', 'tensor_map', got " + a.dump());
}

json resourcesToJson(const std::optional<KernelResources>& r) {
  if (!r) return nullptr;
  return json{{"registers", r->registers},
              {"local_bytes", r->local_bytes},
              {"static_shared_bytes", r->static_shared_bytes},
              {"max_threads_per_block", r->max_threads_per_block}};
}

std::vector<double> getTimes(const json& o, const std::string& where) {
  const json& t = getArray(o, "times_s", where);
  std::vector<double> out;
  out.reserve(t.size());
  for (size_t i = 0; i < t.size(); ++i) {
    if (!t[i].is_number()) fail(indexed(sub(where, "times_s"), i), std::string("expected a number, got ") + t[i].type_name());
    out.push_back(t[i].get<double>());
  }
  return out;
}

std::string getStatus(const json& o, const std::string& where) {
  std::string s = getString(o, "status", where);
  const auto& known = resultStatuses();
  if (std::find(known.begin(), known.end(), s) == known.end())
    fail(sub(where, "status"), "unknown status '" + s + "'");
  return s;
}

Result<std::string> readWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path + ": cannot read (" + std::string(strerror(errno)) + ")"};
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Error{path + ": read error"};
  return ss.str();
}

Result<json> readJsonFile(const std::string& path) {
  auto text = readWholeFile(path);
  if (!text) return Error{text.error()};
  try {
    return json::parse(*text);
  } catch (const json::exception& e) {
    return Error{path + ": not valid JSON (" + std::string(e.what()) + ")"};
  }
}

std::string manifestPath(const std::string& dir) { return (fs::path(dir) / "manifest.json").string(); }

}  // namespace

json toJson(const BundleManifest& m) {
  json j;
  j["format"] = kBundleFormat;
  j["version"] = m.version;
  j["created_by"] = m.created_by;
  j["created_at"] = m.created_at;
  j["target"] = m.target;
  j["vendor"] = m.vendor;
  j["arch"] = m.arch;
  if (!m.vulkan_device.is_null()) j["vulkan_device"] = m.vulkan_device;
  j["workloads"] = json::array();
  for (const auto& w : m.workloads) j["workloads"].push_back({{"key", w}});
  j["kernels"] = json::array();
  for (const auto& k : m.kernels) {
    json kj;
    kj["id"] = k.id;
    kj["workload"] = k.workload;
    kj["file"] = k.file;
    kj["format"] = kernelFormatName(k.format);
    if (!k.ptx_file.empty()) kj["ptx_file"] = k.ptx_file;
    kj["kernel_name"] = k.kernel_name;
    kj["args"] = json::array();
    for (const auto& a : k.args) kj["args"].push_back(argToJson(a));
    kj["grid"] = k.grid;
    kj["block"] = k.block;
    kj["dynamic_shared_bytes"] = k.dynamic_shared_bytes;
    if (k.subgroup_size) kj["subgroup_size"] = k.subgroup_size;
    kj["knobs"] = k.knobs;
    if (!k.schedule_sha.empty()) kj["schedule_sha"] = k.schedule_sha;
    kj["static"] = k.static_stats;
    j["kernels"].push_back(std::move(kj));
  }
  return j;
}

Result<BundleManifest> manifestFromJson(const json& j, const std::string& origin) {
  try {
    checkHeader(j, kBundleFormat, kBundleVersion);
    BundleManifest m;
    m.version = kBundleVersion;
    m.created_by = getString(j, "created_by", "");
    m.created_at = getString(j, "created_at", "");
    m.target = getString(j, "target", "");
    m.vendor = getString(j, "vendor", "");
    if (m.vendor != "nvidia" && m.vendor != "amd" && m.vendor != "vulkan")
      fail("vendor", "unknown vendor '" + m.vendor + "' (expected nvidia, amd or vulkan)");
    m.arch = getString(j, "arch", "");
    if (!validArch(m.vendor, m.arch))
      fail("arch", "'" + m.arch + "' is not an " + m.vendor + " architecture (e.g. " +
                       (m.vendor == "nvidia" ? "sm_90" : m.vendor == "vulkan" ? "spirv1.3" : "gfx942") + ")");
    if (j.contains("vulkan_device") && !j["vulkan_device"].is_null())  // Vulkan: compiled for that device
      m.vulkan_device = m.vendor == "vulkan" ? getObject(j, "vulkan_device", "") : (fail("vulkan_device", "not a vulkan bundle"), json());
    const json& ws = getArray(j, "workloads", "");
    std::set<std::string> keys;
    for (size_t i = 0; i < ws.size(); ++i) {
      std::string where = indexed("workloads", i);
      std::string key = getString(ws[i], "key", where);
      auto w = parseWorkloadKey(key);
      if (!w) fail(sub(where, "key"), w.error());
      if (!keys.insert(key).second) fail(where, "workload '" + key + "' listed twice");
      m.workloads.push_back(key);
    }
    const json& ks = getArray(j, "kernels", "");
    std::set<std::string> ids;
    for (size_t i = 0; i < ks.size(); ++i) {
      std::string where = indexed("kernels", i);
      const json& kj = ks[i];
      BundleKernel k;
      k.id = getString(kj, "id", where);
      if (!validId(k.id)) fail(sub(where, "id"), "'" + k.id + "' is not a valid id (non-empty, no spaces or commas)");
      if (!ids.insert(k.id).second) fail(where, "duplicate id '" + k.id + "'");
      where += " (" + k.id + ")";
      k.workload = getString(kj, "workload", where);
      if (!keys.count(k.workload)) fail(sub(where, "workload"), "'" + k.workload + "' is not listed in workloads");
      k.file = getString(kj, "file", where);
      if (!validRelativePath(k.file))
        fail(sub(where, "file"), "'" + k.file + "' must be a path relative to the bundle directory, without '..'");
      std::string fmt = getString(kj, "format", where);
      auto f = parseKernelFormat(fmt);
      if (!f) fail(sub(where, "format"), f.error());
      k.format = *f;
      bool fits = m.vendor == "nvidia"   ? (k.format == KernelFormat::Ptx || k.format == KernelFormat::Cubin)
                  : m.vendor == "vulkan" ? k.format == KernelFormat::Spirv
                                         : k.format == KernelFormat::Hsaco;
      if (!fits) fail(sub(where, "format"), "'" + fmt + "' kernels cannot run on a " + m.vendor + " device");
      if (kj.contains("ptx_file")) {
        k.ptx_file = getString(kj, "ptx_file", where);
        if (k.format != KernelFormat::Cubin) fail(sub(where, "ptx_file"), "only a cubin kernel can have a PTX fallback");
        if (!validRelativePath(k.ptx_file))
          fail(sub(where, "ptx_file"),
               "'" + k.ptx_file + "' must be a path relative to the bundle directory, without '..'");
      }
      k.kernel_name = getString(kj, "kernel_name", where);
      if (k.kernel_name.empty()) fail(sub(where, "kernel_name"), "must not be empty");
      const json& args = getArray(kj, "args", where);
      for (size_t a = 0; a < args.size(); ++a) k.args.push_back(argFromJson(args[a], indexed(sub(where, "args"), a)));
      k.grid = getDims(kj, "grid", where);
      k.block = getDims(kj, "block", where);
      if (kj.contains("dynamic_shared_bytes")) {
        int64_t d = getInt(kj, "dynamic_shared_bytes", where);
        if (d < 0 || d > int64_t(UINT32_MAX)) fail(sub(where, "dynamic_shared_bytes"), "out of range");
        k.dynamic_shared_bytes = uint32_t(d);
      }
      if (kj.contains("subgroup_size")) {
        int64_t s = getInt(kj, "subgroup_size", where);
        if (s < 0 || s > 1024 || (s & (s - 1)) != 0) fail(sub(where, "subgroup_size"), "must be 0 or a power of two up to 1024");
        k.subgroup_size = uint32_t(s);
      }
      if (kj.contains("knobs")) k.knobs = getObject(kj, "knobs", where);
      if (kj.contains("schedule_sha")) k.schedule_sha = getString(kj, "schedule_sha", where);
      if (kj.contains("static")) k.static_stats = getObject(kj, "static", where);
      m.kernels.push_back(std::move(k));
    }
    return m;
  } catch (const Invalid& e) {
    return Error{origin + ": " + e.message};
  } catch (const json::exception& e) {
    return Error{origin + ": " + e.what()};
  }
}

json toJson(const ResultsFile& r) {
  json j;
  j["format"] = kResultsFormat;
  j["version"] = r.version;
  j["runner"] = r.runner;
  j["date"] = r.date;
  j["command"] = r.command;
  j["host"] = r.host;
  if (r.device) {
    j["device"] = {{"vendor", r.device->vendor},
                   {"name", r.device->name},
                   {"arch", r.device->arch},
                   {"driver_version", r.device->driver_version},
                   {"sm_count", r.device->sm_count},
                   {"l2_bytes", r.device->l2_bytes},
                   {"memory_bytes", r.device->memory_bytes}};
  } else {
    j["device"] = nullptr;
  }
  j["options"] = r.options;
  j["results"] = json::array();
  // The fields a kernel result and a reference share.
  auto measured = [](const auto& k) {
    json a = json::array();
    for (double x : k.times_s) a.push_back(finite(x));
    return json{{"workload", k.workload},          {"status", k.status},   {"message", k.message},
                {"times_s", a},                    {"median_s", finite(k.median_s)},
                {"cv", finite(k.cv)},              {"gflops", finite(k.gflops)},
                {"max_abs_err", finite(k.max_abs_err)}, {"checked_entries", k.checked_entries}};
  };
  for (const auto& k : r.results) {
    json e = measured(k);
    e["id"] = k.id;
    e["resources"] = resourcesToJson(k.resources);
    e["loaded"] = k.loaded;
    e["verified"] = k.verified;
    j["results"].push_back(std::move(e));
  }
  j["references"] = json::array();
  for (const auto& k : r.references) {
    json e = measured(k);
    e["peer"] = k.peer;
    j["references"].push_back(std::move(e));
  }
  j["notes"] = r.notes;
  return j;
}

Result<ResultsFile> resultsFromJson(const json& j, const std::string& origin) {
  try {
    checkHeader(j, kResultsFormat, kResultsVersion);
    ResultsFile r;
    r.runner = getString(j, "runner", "");
    r.date = getString(j, "date", "");
    r.command = getString(j, "command", "");
    r.host = getString(j, "host", "");
    const json& d = field(j, "device", "");
    if (!d.is_null()) {
      if (!d.is_object()) fail("device", std::string("expected an object or null, got ") + d.type_name());
      DeviceInfo di;
      di.vendor = getString(d, "vendor", "device");
      di.name = getString(d, "name", "device");
      di.arch = getString(d, "arch", "device");
      di.driver_version = getString(d, "driver_version", "device");
      di.sm_count = getInt(d, "sm_count", "device");
      di.l2_bytes = getInt(d, "l2_bytes", "device");
      di.memory_bytes = getInt(d, "memory_bytes", "device");
      r.device = di;
    }
    r.options = getObject(j, "options", "");
    const json& rs = getArray(j, "results", "");
    std::set<std::string> ids;
    // The fields a kernel result and a reference share (as written by resultsToJson).
    auto readMeasured = [&](auto& k, const json& e, const std::string& where) {
      k.workload = getString(e, "workload", where);
      k.status = getStatus(e, where);
      k.message = getString(e, "message", where);
      k.times_s = getTimes(e, where);
      k.median_s = getNumber(e, "median_s", where);
      k.cv = getNumber(e, "cv", where);
      k.gflops = getNumber(e, "gflops", where);
      k.max_abs_err = getNumber(e, "max_abs_err", where);
      k.checked_entries = getInt(e, "checked_entries", where);
    };
    for (size_t i = 0; i < rs.size(); ++i) {
      std::string where = indexed("results", i);
      KernelResult k;
      k.id = getString(rs[i], "id", where);
      if (!ids.insert(k.id).second) fail(where, "duplicate id '" + k.id + "'");
      where += " (" + k.id + ")";
      readMeasured(k, rs[i], where);
      const json& res = field(rs[i], "resources", where);
      if (!res.is_null()) {
        std::string rw = sub(where, "resources");
        if (!res.is_object()) fail(rw, std::string("expected an object or null, got ") + res.type_name());
        KernelResources kr;
        kr.registers = getInt(res, "registers", rw);
        kr.local_bytes = getInt(res, "local_bytes", rw);
        kr.static_shared_bytes = getInt(res, "static_shared_bytes", rw);
        kr.max_threads_per_block = getInt(res, "max_threads_per_block", rw);
        k.resources = kr;
      }
      if (rs[i].contains("loaded")) k.loaded = getString(rs[i], "loaded", where);
      if (rs[i].contains("verified")) k.verified = getInt(rs[i], "verified", where);
      r.results.push_back(std::move(k));
    }
    const json& refs = getArray(j, "references", "");
    for (size_t i = 0; i < refs.size(); ++i) {
      std::string where = indexed("references", i);
      ReferenceResult k;
      readMeasured(k, refs[i], where);
      k.peer = getString(refs[i], "peer", where);
      r.references.push_back(std::move(k));
    }
    if (j.contains("notes")) {
      const json& notes = getArray(j, "notes", "");
      for (size_t i = 0; i < notes.size(); ++i) {
        if (!notes[i].is_string()) fail(indexed("notes", i), "expected a string");
        r.notes.push_back(notes[i].get<std::string>());
      }
    }
    return r;
  } catch (const Invalid& e) {
    return Error{origin + ": " + e.message};
  } catch (const json::exception& e) {
    return Error{origin + ": " + e.what()};
  }
}

Status writeFileAtomic(const std::string& path, const std::string& contents) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Error{"cannot write " + path + " (" + strerror(errno) + ")"};
  size_t off = 0;
  while (off < contents.size()) {
    ssize_t n = ::write(fd, contents.data() + off, contents.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return Error{"cannot write " + path + " (" + strerror(e) + ")"};
    }
    off += size_t(n);
  }
  ::fsync(fd);
  if (::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return Error{"cannot write " + path + " (" + strerror(e) + ")"};
  }
  return okStatus();
}

std::string isoTimeUtc() {
  time_t t = time(nullptr);
  struct tm tm;
  gmtime_r(&t, &tm);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Status writeBundleManifest(const std::string& dir, const BundleManifest& m) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error{"cannot create " + dir + " (" + ec.message() + ")"};
  return writeFileAtomic(manifestPath(dir), toJson(m).dump(2) + "\n");
}

Status writeBundle(const std::string& dir, const BundleManifest& m, const std::map<std::string, std::string>& files) {
  auto st = writeBundleManifest(dir, m);
  if (!st) return st;
  for (const auto& [rel, contents] : files) {
    if (!validRelativePath(rel)) return Error{"kernel file '" + rel + "' must be relative to the bundle directory"};
    fs::path p = fs::path(dir) / rel;
    std::error_code ec;
    fs::create_directories(p.parent_path(), ec);
    if (ec) return Error{"cannot create " + p.parent_path().string() + " (" + ec.message() + ")"};
    auto w = writeFileAtomic(p.string(), contents);
    if (!w) return w;
  }
  return okStatus();
}

Result<BundleManifest> readBundle(const std::string& dir) {
  const std::string path = manifestPath(dir);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Error{dir + ": not a bundle directory (it does not exist or is not a directory)"};
  auto j = readJsonFile(path);
  if (!j) return Error{j.error()};
  auto m = manifestFromJson(*j, path);
  if (!m) return m;
  for (size_t i = 0; i < m->kernels.size(); ++i) {
    const auto& k = m->kernels[i];
    for (const std::string* f : {&k.file, &k.ptx_file}) {
      if (f->empty()) continue;
      if (!fs::is_regular_file(fs::path(dir) / *f, ec))
        return Error{path + ": kernels[" + std::to_string(i) + "] (" + k.id + "): kernel file '" + *f +
                     "' not found in " + dir};
    }
  }
  return m;
}

Result<std::string> readKernelFile(const std::string& dir, const BundleKernel& k) {
  return readWholeFile((fs::path(dir) / k.file).string());
}

Status writeResults(const std::string& path, const ResultsFile& r) {
  return writeFileAtomic(path, toJson(r).dump(1) + "\n");
}

Result<ResultsFile> readResults(const std::string& path) {
  auto j = readJsonFile(path);
  if (!j) return Error{j.error()};
  return resultsFromJson(*j, path);
}

Result<TensorMapSpec> parseTensorMapSpec(const std::string& s) {
  // tmap:A:f16:dims=K,M:stride=BYTES:box=64,BM:swizzle=128
  TensorMapSpec t;
  long long d0, d1, st, b0, b1, sw;
  char buf = 0, elem[8] = {0};
  int used = 0;
  if (std::sscanf(s.c_str(), "tmap:%c:%7[a-z0-9]:dims=%lld,%lld:stride=%lld:box=%lld,%lld:swizzle=%lld%n", &buf, elem, &d0,
                  &d1, &st, &b0, &b1, &sw, &used) != 8 ||
      size_t(used) != s.size() || (buf != 'A' && buf != 'B'))
    return Error{"not a tensor-map argument: " + s};
  t.buffer = buf, t.elem = elem, t.dims = {d0, d1}, t.stride_bytes = st, t.box = {b0, b1}, t.swizzle = sw;
  return t;
}

}  // namespace sextant
