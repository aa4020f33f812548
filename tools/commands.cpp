#include "commands.h"
#include "records_internal.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "sextant/codegen/compiler.h"
#include "sextant/codegen/cpu_schedule.h"
#include "sextant/codegen/gpu_resources.h"
#include "sextant/codegen/gpu_schedule.h"
#include "sextant/hwspec/gpu_target.h"
#include "sextant/codegen/library.h"
#include "sextant/codegen/op_schedules.h"
#include "sextant/common/strings.h"
#include "sextant/costmodel/features.h"
#include "sextant/costmodel/model.h"
#include "sextant/db/database.h"
#include "sextant/db/interchange.h"
#include "sextant/hwspec/devices.h"
#include "sextant/hwspec/target.h"
#include "sextant/runtime/fma_peak.h"

namespace sextant::cli {

// The CPU model a CPU target key describes ("cpu:x86_64-avx512"), so that a database tuned on one
// machine is exported on another with the space it was tuned in.
HostCpu cpuForTargetArch(const std::string& arch) {
  HostCpu c;
  if (arch.find("avx512") != std::string::npos) c.vector_bits = 512, c.vector_registers = 32;
  else if (arch.find("avx2") != std::string::npos) c.vector_bits = 256, c.vector_registers = 16;
  else c.vector_bits = 128, c.vector_registers = 16;
  return c;
}


using json = nlohmann::json;

std::string thisMachine() { return machineKey(hostCpu(), llvmHostCpuName()); }

std::string machineFilter(const std::string& option, bool gpu_target) {
  // A GPU target's records come from GPU machines (bundles measured elsewhere, or this host's
  // GPU): "this" means every machine's for them; each exported entry names its machine.
  if (option.empty() || option == "this") return gpu_target ? "" : thisMachine();
  if (option == "any" || option == "all") return "";
  return option;
}

std::string otherMachinesHint(const std::vector<std::string>& keys) {
  if (keys.empty()) return "";
  return "; the database has measurements of other machines (" + join(keys, ", ") +
         "): --machine any, or --machine KEY, uses them (tune show lists them)";
}

int fail(const std::string& msg) {
  std::string m = msg;
  std::replace(m.begin(), m.end(), '\n', ' ');
  std::cerr << "tune: error: " << m << "\n";
  return 2;
}

Result<std::string> readFile(const std::string& path) {
  std::ifstream f(path);
  if (!f) return Error{path + ": cannot read the file"};
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Writes through a temporary file and a rename: a reader never sees half a file.
Status writeFileAtomically(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp" + std::to_string(getpid());
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) return Error{path + ": cannot write (does the directory exist?)"};
    f << text;
    if (!f.flush()) return Error{path + ": write failed"};
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return Error{path + ": cannot write: " + ec.message()};
  }
  return okStatus();
}

static int majorOf(const std::string& version) { return std::atoi(version.c_str()); }

LibraryEntry::Kind gpuLibraryKind(const Target& t) {
  return t.kind == TargetKind::Nvidia ? LibraryEntry::Kind::Nvidia
         : t.kind == TargetKind::Vulkan ? LibraryEntry::Kind::Vulkan
                                        : LibraryEntry::Kind::Amd;
}

TargetSpace spaceFor(const GemmWorkload& w, const Target& t) {
  if (!t.isGpu()) return {buildCpuGemmSpace(w, cpuForTargetArch(t.arch), cpuArchThreads(t.arch)), LibraryEntry::Kind::Cpu, ""};
  auto g = gpuTargetInfo(t);
  if (!g) return {Space(), LibraryEntry::Kind::Cpu, g.error()};
  return {buildGpuGemmSpace(w, *g), gpuLibraryKind(t), ""};
}

Resolved resolveRecord(const RecordRow& r, const Target& target) {
  Resolved out;
  auto w = parseWorkloadKey(r.workload_key);
  if (!w) {
    out.error = w.error();
    return out;
  }
  // (What a CPU library cannot carry: GPU targets have schedules of their own.)
  if (std::string why = target.isGpu() ? "" : cpuSchedulesOf(*w).notInLibraries(*w); !why.empty()) {
    out.error = why;
    return out;
  }
  TargetSpace ts = spaceFor(*w, target);
  if (!ts.error.empty()) {
    out.error = ts.error;
    return out;
  }
  const Space& space = ts.space;
  auto knobs = json::parse(r.knobs, nullptr, false);
  std::map<std::string, int64_t> km;
  if (knobs.is_object())
    for (auto& [k, v] : knobs.items())
      if (v.is_number_integer()) km[k] = v.get<int64_t>();
  auto cand = space.fromMap(km);
  if (!cand || !space.isValid(*cand)) {
    out.error = "its knobs (" + r.candidate + ") are not a valid point of the current schedule space";
    return out;
  }
  if (majorOf(r.llvm_version) != majorOf(llvmVersion()))
    out.stale = "measured with LLVM " + r.llvm_version + ", this is LLVM " + llvmVersion();
  else if (r.schema_version < kOldestCompatibleSchema)
    out.stale = "measured with database schema " + std::to_string(r.schema_version);
  std::string measured_actions;
  if (out.stale.empty() && !r.schedule.empty() &&
      r.schedule != (target.isGpu() ? emitGpuGemmSchedule(*w, space, *cand) : emitCpuGemmSchedule(*w, space, *cand))) {
    // The generator has changed since: a CPU record keeps the script it was measured with (same
    // LLVM major and schema, so it still applies); a GPU record is stale.
    if (!target.isGpu()) measured_actions = cpuGemmActionsOf(r.schedule);
    if (measured_actions.empty()) out.stale = "the schedule generator changed since it was measured";
  }
  LibraryEntry e{*w, space, *cand, r.source == "predicted" ? "predicted" : "tuned", w->batched() ? w->batch : 0,
                 ts.kind, {}, {}};
  if (!measured_actions.empty()) {
    e.actions = measured_actions;
    e.provenance["schedule"] = "as measured (the generator emits another script for these knobs today)";
  }
  e.provenance["record"] = std::to_string(r.id);
  char g[32];
  snprintf(g, sizeof g, "%.1f", r.figure());  // the confirmed figure where there is one (issue #35)
  e.provenance["gflops"] = r.source == "predicted" ? "predicted" : g;
  if (r.source == "measured") {
    e.provenance["confirmed"] = r.confirmed() ? "yes: final comparison, " + std::to_string(r.measurements()) + " measurements"
                                              : r.confirmations > 0 ? "failed its confirmation"
                                                                    : "no: measured once";
    e.provenance["machine"] = r.machine;
  }
  e.provenance["measured_at"] = r.created_at;
  e.provenance["tool"] = r.tool_version;
  e.provenance["llvm"] = r.llvm_version;
  e.provenance["target"] = r.target_key;
  if (!out.stale.empty()) e.provenance["stale"] = out.stale;
  out.entry = std::move(e);
  return out;
}

// The best measured record per workload for a target among the machines `machine` matches,
// ranked as Database::best ranks (ranksAbove: confirmed first); predicted ones only where asked for
// and no measured one exists. `others`: the machines of the measured records left out.
static Result<std::vector<RecordRow>> bestPerWorkload(Database& db, const std::string& target_key, bool include_predicted,
                                                     const std::string& machine, std::vector<std::string>* others) {
  auto recs = db.allRecords(true);
  if (!recs) return Error{recs.error()};
  std::map<std::string, RecordRow> best;
  for (auto& r : *recs) {
    if (r.target_key != target_key || r.status != "ok") continue;
    if (r.source == "predicted" && !include_predicted) continue;
    if (r.source == "measured" && !machineMatches(r.machine, machine)) {
      if (others && std::find(others->begin(), others->end(), r.machine) == others->end()) others->push_back(r.machine);
      continue;
    }
    auto it = best.find(r.workload_key);
    // Measured first (ranksAbove); predicted ones (GFLOP/s 0) by the model's score.
    auto score = [](const RecordRow& x) {
      auto st = json::parse(x.stats, nullptr, false);
      return st.is_object() && st.contains("predicted") ? st["predicted"].value("score", 0.0) : 0.0;
    };
    auto above = [&](const RecordRow& x, const RecordRow& y) {
      if ((x.source == "measured") != (y.source == "measured")) return x.source == "measured";
      return x.source == "measured" ? ranksAbove(x, y) : score(x) > score(y);
    };
    if (it == best.end() || above(r, it->second)) best[r.workload_key] = r;
  }
  std::vector<RecordRow> out;
  for (auto& [k, r] : best) out.push_back(r);
  return out;
}

int cmdExport(const ExportArgs& a) {
  if (a.out.empty()) return fail("export needs -o FILE");
  if (a.format != "transform" && a.format != "json") return fail("--format must be transform or json");
  auto db = Database::open(a.db, /*create=*/false);
  if (!db) return fail(db.error());
  auto target = resolveTarget(a.target);
  if (target) target = targetWithThreads(*target, a.threads);
  if (!target) return fail(target.error());
  const std::string machine = machineFilter(a.machine, target->isGpu());
  if (a.format == "json") {
    ExportOptions o;
    o.target_key = target->key();
    o.include_predicted = a.include_predicted;
    o.machine = machine;
    auto text = exportRecordsJsonl(*db, o);
    if (!text) return fail(text.error());
    int64_t n = std::count(text->begin(), text->end(), '\n') - 1;
    if (n == 0) return fail(db->path() + ": nothing to export for target " + target->key() +
                            (machine.empty() ? "" : " measured by " + machine));
    if (auto s = writeFileAtomically(a.out, *text); !s) return fail(s.error());
    std::cout << "wrote " << n << " records for " << target->key() << " to " << a.out << "\n";
    return 0;
  }

  std::vector<std::string> others;
  auto best = bestPerWorkload(*db, target->key(), a.include_predicted, machine, &others);
  if (!best) return fail(best.error());
  if (best->empty())
    return fail(db->path() + ": nothing to export: no measured schedule for target " + target->key() +
                (machine.empty() ? "" : " by machine " + machine) + otherMachinesHint(others));
  std::vector<LibraryEntry> entries;
  std::vector<std::string> stale;
  for (const auto& r : *best) {
    Resolved res = resolveRecord(r, *target);
    if (!res.error.empty()) {
      std::cerr << "tune: warning: skipping " << r.workload_key << " (record " << r.id << "): " << res.error << "\n";
      continue;
    }
    if (!res.stale.empty()) {
      stale.push_back(r.workload_key + " (record " + std::to_string(r.id) + "): " + res.stale);
      if (!a.allow_stale) continue;
      std::cerr << "tune: warning: exporting a stale schedule for " << r.workload_key << ": " << res.stale << "\n";
    }
    entries.push_back(std::move(*res.entry));
  }
  if (!stale.empty() && !a.allow_stale)
    return fail("refusing to export stale schedules (a schedule that no longer compiles is worse than none; "
                "--allow-stale exports them with a warning): " + join(stale, "; "));
  if (entries.empty()) return fail(a.db + ": nothing to export for target " + target->key());
  auto lib = emitTransformLibrary(entries, "Sextant tuned schedules for " + target->key() + " from " + db->path() +
                                               (machine.empty() ? "" : ", measured by " + machine));
  if (!lib) return fail(lib.error());
  // Never write a library that mlir-opt cannot parse.
  if (auto s = validateTransformLibrary(*lib); !s) return fail("internal error: " + s.error());
  if (auto s = writeFileAtomically(a.out, *lib); !s) return fail(s.error());
  std::cout << "wrote " << entries.size() << " tuned schedule" << (entries.size() == 1 ? "" : "s") << " for "
            << target->key() << " to " << a.out << "\n";
  for (const auto& e : entries)
    std::cout << "  " << e.workload.key() << "  " << e.provenance.at("gflops") << " GFLOP/s  (record "
              << e.provenance.at("record") << ", " << e.source
              << (e.provenance.count("confirmed") ? ", confirmed " + e.provenance.at("confirmed") : std::string()) << ")\n";
  const bool own_pass = lib->find("\"sextant-") != std::string::npos;  // MFMA, bf16 mma.sync: needs sextant-opt
  std::cout << "apply with: " << (own_pass ? "sextant-opt (mlir-opt with Sextant's passes; a stock mlir-opt lacks them)" : "mlir-opt") << " IN.mlir --transform-preload-library=transform-library-paths=" << a.out << " --transform-interpreter\n";
  if (target->kind == TargetKind::Vulkan) {
    std::cout << "then compile for Vulkan: tune compile IN.mlir --target vulkan -o OUT.mlir (MLIR 22 has no Vulkan host\n"
                 "lowering: the kernels become SPIR-V files beside OUT.mlir, validated by spirv-val)\n";
  } else if (target->isGpu()) {
    auto g = gpuTargetInfo(*target);
    if (g) {
      const std::string lower =
          gpuLoweringPipeline(target->kind == TargetKind::Nvidia, lib->find("\"sextant-wgmma-gemm\"") != std::string::npos ? "sm_90a" : g->chip, g->features, "/opt/rocm", true);
      std::cout << "then lower: mlir-opt OUT.mlir --pass-pipeline='" << lower << "'\n"
                << (target->kind == TargetKind::Amd ? "(toolkit: a prefix whose llvm/bin/ld.lld is lld 17 or newer)\n" : "")
                << "(GPU schedules: one GEMM per function, C initialised by a linalg.fill; or use tune compile)\n";
    }
  }
  return 0;
}

int cmdImport(const std::string& file, const std::string& db_path) {
  auto text = readFile(file);
  if (!text) return fail(text.error());
  // A failed import leaves nothing behind: a database file it created is removed again.
  const bool created = !Database::isServerUrl(db_path) && !std::filesystem::exists(db_path);
  auto cleanup = [&] {
    if (!created) return;
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(db_path + suffix, ec);
  };
  auto st = [&]() -> Result<ImportStats> {
    auto db = Database::open(db_path);
    if (!db) return Error{db.error()};
    return importRecordsJsonl(*db, *text, file);
  }();
  if (!st) {
    cleanup();
    return fail(st.error());
  }
  std::cout << file << ": " << st->read << " records read, " << st->inserted << " imported, " << st->duplicates
            << " duplicates skipped, " << st->conflicts
            << " conflicting measurements kept side by side with existing ones\n";
  return 0;
}

int cmdMerge(const std::string& a, const std::string& b, const std::string& out) {
  if (out.empty()) return fail("merge needs -o OUT.db");
  auto da = Database::open(a, false);
  if (!da) return fail(da.error());
  auto dbb = Database::open(b, false);
  if (!dbb) return fail(dbb.error());
  auto dc = Database::open(out);
  if (!dc) return fail(dc.error());
  for (Database* src : {&*da, &*dbb}) {
    auto st = mergeDatabase(*dc, *src);
    if (!st) return fail(st.error());
    std::cout << src->path() << ": " << st->inserted << " records merged, " << st->duplicates << " duplicates, "
              << st->conflicts << " conflicting measurements kept side by side\n";
  }
  return 0;
}

int cmdHwList() {
  const DeviceTable& t = builtinDeviceTable();
  printf("hardware table version %d (%zu devices; tune hw show NAME for sources and the Blueprint)\n\n", t.version,
         t.devices.size());
  printf("%-10s %-32s %-7s %5s %6s %8s %9s %7s %6s %5s\n", "name", "device", "arch", "CUs", "MHz", "FP32 TF",
         "FP16 TF", "GB/s", "L2 MB", "warp");
  for (const auto& d : t.devices)
    printf("%-10s %-32s %-7s %5lld %6.0f %8.1f %9.1f %7.0f %6.0f %5lld\n", d.name.c_str(), d.display.c_str(),
           d.arch.c_str(), (long long)d.compute_units, d.boost_mhz, d.fp32_tflops, d.fp16_tflops, d.bw_gbs, d.l2_mb,
           (long long)d.warp_size);
  const HostCpu& c = hostCpu();
  printf("%-10s %-32s %-7s %5d   (tune hw show cpu)\n", "cpu", c.model.substr(0, 32).c_str(), c.vector_isa.c_str(),
         c.logical_cores);
  return 0;
}

int cmdHwShow(const std::string& name, bool as_json) {
  if (name == "vulkan") return cmdHwShowVulkan(as_json);
  if (as_json) return fail("--json is for tune hw show vulkan (the description --vulkan-device reads)");
  if (name == "cpu" || name == "host") {
    const HostCpu& c = hostCpu();
    printf("host CPU (from /proc/cpuinfo and sysfs)\n");
    printf("  model            %s (%s)\n", c.model.c_str(), c.vendor.c_str());
    printf("  LLVM CPU         %s\n", llvmHostCpuName().c_str());
    printf("  logical cores    %d\n", c.logical_cores);
    printf("  clock            %.0f MHz as reported (nominal in a VM)\n", c.mhz);
    printf("  vector ISA       %s: %d-bit registers, %d of them, %d f32 lanes\n", c.vector_isa.c_str(), c.vector_bits,
           c.vector_registers, c.f32Lanes());
    printf("  caches           L1d %lld KiB, L2 %lld KiB, L3 %lld KiB (%s)\n", (long long)(c.l1d_bytes >> 10),
           (long long)(c.l2_bytes >> 10), (long long)(c.l3_bytes >> 10),
           c.cache_source == "cpuid"   ? "from CPUID: this system has no sysfs cache folder; a VM may report the "
                                         "whole socket's L3"
           : c.cache_source.empty()    ? "unknown: the cost model's features assume L1d 48 KiB, L2 2 MiB, L3 32 MiB"
                                       : "from sysfs");
    std::vector<std::string> notable;
    for (const char* f :
         {"avx2", "fma", "avx512f", "avx512bw", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8"})
      if (c.hasFlag(f)) notable.push_back(f);
    printf("  features         %s\n", join(notable, " ").c_str());
    printf("  code generation  -mcpu %s with the host's own feature bits (CPUID)%s\n", llvmHostCpuName().c_str(),
           hasAmxBf16(c) ? ", AMX included" : "");
    // Measured here (about a second each, one thread): the peaks the tuned kernels are reported against.
    const FmaPeak fma = measureFmaPeak(1, 0.15, 3);
    printf("  f32 FMA peak     %.0f GFLOP/s on 1 thread (%s), measured now\n", fma.gflops, fma.isa.c_str());
    if (hasAmxBf16(c)) {
      if (auto s = requestAmxPermission(); !s) {
        printf("  AMX              present, but %s: bf16 GEMMs cannot run here\n", s.error().c_str());
      } else {
        const FmaPeak amx = measureAmxPeak(false, 1, 0.15, 3);
        printf("  AMX bf16 peak    %.0f GFLOP/s on 1 thread (tdpbf16ps on 4 register tiles), measured now; "
               "--dtype bf16 GEMMs tune on the AMX route\n",
               amx.gflops);
        if (c.hasFlag("amx_int8")) {
          const FmaPeak i8 = measureAmxPeak(true, 1, 0.15, 3);
          printf("  AMX int8 peak    %.0f GOP/s on 1 thread (tdpbssd on 4 register tiles), measured now; "
                 "--dtype s8 GEMMs tune on the AMX route\n",
                 i8.gflops);
        }
      }
    } else {
      printf("  AMX              none: --dtype bf16 is not available on the cpu target here\n");
    }
    return 0;
  }
  const DeviceTable& t = builtinDeviceTable();
  const DeviceSpec* d = t.find(name);
  if (!d) {
    std::vector<std::string> names;
    for (const auto& x : t.devices) names.push_back(x.name);
    return fail("unknown device '" + name + "' (known: " + join(names, ", ") + ", cpu)");
  }
  auto row = [&](const char* field, const std::string& value) {
    auto note = d->notes.find(field);
    printf("  %-22s %s%s\n", field, value.c_str(), note == d->notes.end() ? "" : ("   [" + note->second + "]").c_str());
  };
  auto num = [](double v) {
    char b[32];
    snprintf(b, sizeof b, "%g", v);
    return std::string(b);
  };
  printf("%s (%s, %s)\n", d->display.c_str(), d->vendor.c_str(), d->arch.c_str());
  row("compute_units", std::to_string(d->compute_units));
  row("boost_mhz", num(d->boost_mhz));
  row("fp32_tflops", num(d->fp32_tflops));
  row("fp16_tflops", num(d->fp16_tflops) + " (dense, matrix units)");
  row("bf16_tflops", d->bf16_tflops > 0 ? num(d->bf16_tflops) + " (dense, matrix units)" : "no bf16 matrix support");
  row("mem_gb", num(d->mem_gb));
  row("bw_gbs", num(d->bw_gbs));
  row("l2_mb", num(d->l2_mb));
  row("smem_per_cu_kb", num(d->smem_per_cu_kb));
  row("smem_per_block_kb", num(d->smem_per_block_kb));
  row("regs_per_cu", std::to_string(d->regs_per_cu));
  row("warp_size", std::to_string(d->warp_size));
  row("max_threads_per_block", std::to_string(d->max_threads_per_block));
  row("max_threads_per_cu", std::to_string(d->max_threads_per_cu));
  row("matrix_shapes", join(d->matrix_shapes, ", "));
  printf("  sources:\n");
  for (const auto& s : d->sources) printf("    [%s] %s\n", s.c_str(), t.sources.at(s).c_str());
  Blueprint b = fitBlueprint(t);
  auto e = b.embed(*d);
  printf("  Blueprint (table v%d, PCA of %zu standardised log figures):", b.table_version, b.features.size());
  for (double v : e) printf(" %+.3f", v);
  printf("\n");
  return 0;
}

}  // namespace sextant::cli
