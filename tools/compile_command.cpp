// tune compile: a user's module with the database's tuned schedules (or the untuned defaults)
// applied, compiled for the CPU (shared object / object file) or a GPU (MLIR with kernel binaries).
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
#include "sextant/runtime/gpu_runner.h"
#include "sextant/codegen/library.h"
#include "sextant/common/strings.h"
#include "sextant/costmodel/features.h"
#include "sextant/costmodel/model.h"
#include "sextant/db/database.h"
#include "sextant/db/interchange.h"
#include "sextant/frontend/onnx_import.h"
#include "sextant/hwspec/devices.h"
#include "sextant/hwspec/target.h"

namespace sextant::cli {

using json = nlohmann::json;

namespace {

std::string expectedOf(const LibraryEntry& e) {
  if (e.source == "default") return "-";
  if (e.source == "predicted") return "predicted";
  return std::to_string(int(std::atof(e.provenance.at("gflops").c_str()) + 0.5)) + " GFLOP/s";
}

// One line of tune compile's per-op report.
struct ReportLine {
  const FoundOp* op;
  std::string key, source, expected;
};

ReportLine reportLine(const FoundOp& op, const std::string& key, const LibraryEntry& e) {
  return {&op, key, e.source == "default" ? "default" : e.source + " (record " + e.provenance.at("record") + ")",
          expectedOf(e)};
}

void printReport(const std::vector<ReportLine>& report, int op_w, int loc_w, int key_w, int source_w) {
  for (const ReportLine& l : report) {  // columns as wide as their widest entry (the location is shortened)
    op_w = std::max(op_w, int(l.op->op_name.size()));
    key_w = std::max(key_w, int(l.key.size()));
    source_w = std::max(source_w, int(l.source.size()));
  }
  printf("%-*s %-*s %-*s %-*s %s\n", op_w, "op", loc_w, "location", key_w, "workload", source_w, "schedule",
         "expected");
  for (const auto& l : report) {
    std::string loc = l.op->location;
    if (int(loc.size()) > loc_w) loc = "..." + loc.substr(loc.size() - size_t(loc_w - 3));
    printf("%-*s %-*s %-*s %-*s %s\n", op_w, l.op->op_name.c_str(), loc_w, loc.c_str(), key_w, l.key.c_str(), source_w,
           l.source.c_str(), l.expected.c_str());
  }
}

// The database's best usable record for a workload as a library entry; none (with a warning if
// the record is stale or unusable) means the default schedule. allow_stale: a stale record's
// schedule is re-emitted from its knobs and used, with a warning (as tune export --allow-stale).
Result<std::optional<LibraryEntry>> tunedEntry(Database& db, const Target& target, const std::string& key,
                                               bool allow_stale, const std::string& machine) {
  auto best = db.best(key, target.key(), machine);
  if (!best) return Error{best.error()};
  if (!*best) return std::optional<LibraryEntry>{};
  Resolved res = resolveRecord(**best, target);
  if (res.error.empty() && (res.stale.empty() || allow_stale)) {
    if (!res.stale.empty())
      std::cerr << "tune: warning: " << key << ": using a stale tuned schedule (" << res.stale
                << "), re-emitted from its knobs\n";
    return std::move(res.entry);
  }
  std::cerr << "tune: warning: " << key << ": the tuned record is not usable ("
            << (res.error.empty() ? res.stale + "; --allow-stale uses it" : res.error)
            << "); using the default schedule\n";
  return std::optional<LibraryEntry>{};
}

// The library tune compile applies (empty: no entries), also written to --emit-library.
Result<std::string> compileLibrary(const std::vector<LibraryEntry>& entries, const CompileArgs& a) {
  if (entries.empty()) return std::string();
  auto lib = emitTransformLibrary(entries, "schedules applied by tune compile to " + a.input, a.fuse_epilogues);
  if (!lib) return lib;
  if (!a.library_out.empty())
    if (auto st = writeFileAtomically(a.library_out, *lib); !st) return Error{st.error()};
  return lib;
}

// tune compile for a GPU target: every GEMM becomes a kernel (tuned or default schedule); what
// cannot become one is an error, because the rest of the module would run on the host.
int compileForGpu(const CompileArgs& a, const Target& target, const std::string& text,
                  const std::vector<FoundOp>& ops, Database& db) {
  auto g = gpuTargetInfo(target);
  if (!g) return fail(g.error());
  // A described device's limits and class (untuned GEMMs get its class's default), else ...
  if (auto st = applyVulkanDeviceFile(*g, target, a.vulkan_device); !st) return fail(st.error());
  if (a.vulkan_device.empty() && target.kind == TargetKind::Vulkan) {
    // This machine's device vulkan:N, where it has one (as tune measures it): its limits and class.
    if (auto list = listVulkanDevices(); list)
      for (const auto& d : *list)
        if (std::to_string(d.index) == target.device) applyVulkanLimits(*g, d.limits);
  }
  std::vector<LibraryEntry> entries;
  std::map<std::string, size_t> entry_of;       // workload key -> entry
  std::map<std::string, std::string> gemm_in;   // function -> location of its scheduled GEMM
  std::map<std::string, size_t> entry_in;       // function -> its GEMM's entry
  std::vector<std::string> problems;
  std::vector<ReportLine> report;
  for (const FoundOp& op : ops) {
    const std::string where = op.op_name + " at " + op.location;
    if (!op.supported) {
      problems.push_back(where + ": " + op.reason);
      continue;
    }
    if (op.batch > 0 && target.kind != TargetKind::Vulkan) {
      problems.push_back(where + ": batched GEMMs have GPU schedules on the vulkan target only");
      continue;
    }
    if (!op.conv.empty()) {
      problems.push_back(where + ": convolutions have no GPU schedule yet");
      continue;
    }
    if (!op.init_is_fill) {
      problems.push_back(where + ": C is not initialised by a linalg.fill (GPU schedules fuse the fill into the "
                         "kernel; accumulating into C is not supported)");
      continue;
    }
    if (auto [it, fresh] = gemm_in.emplace(op.function, op.location); !fresh) {
      problems.push_back(where + ": a second GEMM in @" + op.function + " (also at " + it->second +
                         "); GPU schedules take one GEMM per function");
      continue;
    }
    auto w = workloadOf(op);
    if (!w) {
      problems.push_back(where + ": " + w.error());
      continue;
    }
    w->weights = false;  // GPU kernels read B as stored
    if (target.kind == TargetKind::Vulkan && !vulkanSupportsTypes(*w)) {
      problems.push_back(where + ": the vulkan target compiles f32 and f16 GEMMs with f32 results only (" + w->key() + ")");
      continue;
    }
    const std::string key = w->key();
    if (!entry_of.count(key)) {
      auto entry = tunedEntry(db, target, key, a.allow_stale, machineFilter(a.machine, target.isGpu()));
      if (!entry) return fail(entry.error());
      if (!*entry) {
        Space space = buildGpuGemmSpace(*w, *g);
        Candidate c = defaultGpuCandidate(*w, space, *g);
        if (space.size() == 0 || !planGpuGemm(*w, space, c)) {
          problems.push_back(where + ": no GPU schedule fits " + w->shapeString() +
                             " (M, N and K must be multiples of 16)");
          continue;
        }
        *entry = LibraryEntry{*w, space, c, "default", w->batched() ? w->batch : 0, gpuLibraryKind(target), {}, {}};
      }
      entry_of[key] = entries.size();
      entries.push_back(std::move(**entry));
    }
    entry_in[op.function] = entry_of[key];
    report.push_back(reportLine(op, key, entries[entry_of[key]]));
  }
  if (!problems.empty())
    return fail(a.input + ": cannot compile for " + target.name + ": " + join(problems, "; "));
  if (entries.empty()) return fail(a.input + ": no GEMM-like op to compile for " + target.name);
  auto lib = compileLibrary(entries, a);
  if (!lib) return fail(lib.error());

  GpuModuleRequest req;
  req.nvidia = target.kind == TargetKind::Nvidia;
  req.vulkan = target.kind == TargetKind::Vulkan;
  // Vulkan: each function's plan (a cooperative-matrix kernel needs the SPIR-V 1.6 environment; the
  // others keep the version they need, spirv-update-vce lowers it; a required subgroup size is reported).
  std::map<std::string, GpuPlan> plan_in;  // function -> its GEMM's plan
  bool coop = false;
  for (const auto& [function, i] : entry_in)
    if (auto p = planGpuGemm(entries[i].workload, entries[i].space, entries[i].candidate); p && req.vulkan)
      coop |= p->mma, plan_in[function] = *p;
  if (req.vulkan) req.spirv_target = coop ? vulkanCoopMatrixTargetEnv(*g, g->warp_size) : vulkanTargetEnv(*g);
  req.chip = g->chip;
  req.features = g->features;
  req.input_name = a.input;
  req.out_path = a.out + ".tmp" + std::to_string(getpid());
  std::vector<GpuModuleKernel> kernels;
  CompileOutcome c = compileModuleGpu(text, *lib, req, kernels);
  if (!c.ok) {
    std::error_code ec;
    std::filesystem::remove(req.out_path, ec);
    return fail(a.input + ": compilation failed at " + c.stage + ": " + c.message.substr(0, 2000));
  }
  std::error_code ec;
  std::filesystem::rename(req.out_path, a.out, ec);
  if (ec) return fail(a.out + ": cannot write: " + ec.message());

  printReport(report, 16, 22, 34, 20);
  // The kernels, also as files beside the module, with what the assembler says about them.
  const std::string ptxas = req.nvidia ? findPtxas() : "";
  printf("\n%-16s %-30s %-14s %-12s %s\n", "function", "kernel", "grid", "block", "resources");
  for (size_t i = 0; i < kernels.size(); ++i) {
    const GpuModuleKernel& k = kernels[i];
    std::string file = a.out + "." + k.host_function + (req.nvidia ? ".ptx" : req.vulkan ? ".spv" : ".hsaco");
    if (auto s = writeFileAtomically(file, k.object); !s) return fail(s.error());
    std::string res;
    if (req.vulkan) {
      res = "SPIR-V, " + std::to_string(k.object.size()) + " bytes, spirv-val passed";
      if (auto p = plan_in.find(k.host_function); p != plan_in.end()) {
        if (p->second.mma) res += ", cooperative matrices";
        if (p->second.required_subgroup)
          res += ", requires subgroups of " + std::to_string(p->second.required_subgroup) + " (requiredSubgroupSize)";
      }
    } else if (!req.nvidia) {
      GpuResources r = fromAmdgpuMetadata(k.stats);
      res = std::to_string(r.registers) + " VGPRs, " + std::to_string(r.smem_bytes) + " B LDS";
    } else if (!ptxas.empty()) {
      auto r = runPtxas(ptxas, file, g->chip, file + ".cubin");
      std::filesystem::remove(file + ".cubin", ec);
      res = r ? std::to_string(r->registers) + " registers, " + std::to_string(r->smem_bytes) + " B shared, " +
                    std::to_string(r->spill_bytes) + " B spilled (" + r->source + ")"
              : "ptxas failed: " + r.error().substr(0, 200);
    } else {
      res = std::to_string(ptxSharedBytes(k.object)) + " B shared (PTX text; no ptxas for registers)";
    }
    char grid[48], block[48];
    snprintf(grid, sizeof grid, "%lldx%lldx%lld", (long long)k.grid[0], (long long)k.grid[1], (long long)k.grid[2]);
    snprintf(block, sizeof block, "%lldx%lldx%lld", (long long)k.block[0], (long long)k.block[1], (long long)k.block[2]);
    printf("%-16s %-30s %-14s %-12s %s\n", k.host_function.c_str(), k.name.c_str(), grid, block, res.c_str());
    printf("  -> %s\n", file.c_str());
  }
  if (req.vulkan)
    printf("wrote %s (%s: host functions with their gpu.launch_func and the kernels as spirv.module; the SPIR-V\n"
           "binaries beside it, kernel argument i = set 0, binding i; compiled in %.2f s)\n",
           a.out.c_str(), target.key().c_str(), c.seconds);
  else
    printf("wrote %s (%s: host code in the LLVM dialect, kernels as gpu.binary %s; compiled in %.2f s)\n", a.out.c_str(),
           target.key().c_str(), req.nvidia ? "PTX" : "HSACO", c.seconds);
  printf("'expected' is the GFLOP/s measured for the tuned schedule when it was recorded, not a measurement of this "
         "module.\n");
  return 0;
}

}  // namespace

// The workload of an op tune compile supports (error: why it has none): a convolution's from its
// descriptor, a batched matmul's (tune --op batch_matmul) or a GEMM's.
Result<GemmWorkload> workloadOf(const FoundOp& op) {
  if (!op.conv.empty()) {
    auto w = makeConvWorkload(op.conv, "f32", "NHWC");
    if (w) w->weights = op.weights;
    return w;
  }
  GemmWorkload w;
  w.weights = op.weights && op.batch == 0;
  w.m = op.m, w.n = op.n, w.k = op.k;
  auto at = parseDType(op.a_type), bt = parseDType(op.b_type), ct = parseDType(op.c_type);
  if (!at || !bt || !ct) return Error{"element types " + op.a_type + "/" + op.b_type + "/" + op.c_type};
  w.a_type = *at, w.b_type = *bt, w.c_type = *ct;
  w.layout = *parseLayout(op.layout);
  if (op.batch > 0) w.op = OpKind::BatchMatmul, w.batch = op.batch;
  return w;
}

Result<std::string> moduleText(const std::string& path, const std::string& input_shapes) {
  if (path.size() < 5 || path.compare(path.size() - 5, 5, ".onnx") != 0) {
    if (!input_shapes.empty()) return Error{"--input-shape is for ONNX models (" + path + " is taken as MLIR)"};
    return readFile(path);
  }
  auto shapes = parseInputShapes(input_shapes);
  if (!shapes) return Error{shapes.error()};
  auto m = importOnnx(path, *shapes);
  if (!m) return Error{m.error()};
  return m->mlir;
}

int cmdCompile(const CompileArgs& a) {
  auto target = resolveTarget(a.target);
  if (target) target = targetWithThreads(*target, a.threads);
  if (!target) return fail(target.error());
  if (a.out.empty())
    return fail(target->isGpu() ? "compile needs -o OUT.mlir (the lowered module; kernels are also written beside it)"
                                : "compile needs -o OUT (.so for a shared object, .o for an object file)");
  auto text = moduleText(a.input, a.input_shapes);
  if (!text) return fail(text.error());
  auto ops = findGemmOps(*text, a.input);
  if (!ops) return fail(ops.error());
  auto db = Database::open(a.db, /*create=*/false);
  if (!db) return fail(db.error());
  if (!a.vulkan_device.empty() && target->kind != TargetKind::Vulkan) return fail("--vulkan-device is for the vulkan target");
  if (a.profile && target->isGpu()) return fail("--profile is for the cpu target");
  if (target->isGpu()) return compileForGpu(a, *target, *text, *ops, *db);
  return compileCpuModule(a, *target, *text, *ops, *db, /*untuned=*/false, /*print=*/true);
}

// An op that accumulates into its output (its init is not a fill) gets a library entry of its own
// whose actions leave the init alone (schedules may fuse a zero fill into their tiles).
static std::string entryKey(const FoundOp& op, const std::string& key) {
  return op.init_is_fill ? key : key + " (accumulates)";
}

int compileCpuModule(const CompileArgs& a, const Target& target, const std::string& text,
                     const std::vector<FoundOp>& ops, Database& db, bool untuned, bool print) {
  std::vector<LibraryEntry> entries;
  std::map<std::string, size_t> entry_of;  // workload key -> entry
  std::vector<ReportLine> report;
  for (const FoundOp& op : ops) {
    if (!op.supported) {
      report.push_back({&op, "", "untouched", op.reason});
      continue;
    }
    auto w = workloadOf(op);
    if (!w) {
      report.push_back({&op, "", "untouched", w.error()});
      continue;
    }
    // bf16 / s8 ops: the AMX route's pass rewrites a whole GEMM function, not one op of a module
    // (docs/amx.md), and the f32 schedules do not take these types: left as they are.
    if (w->a_type != DType::F32) {
      report.push_back({&op, "", "untouched",
                        std::string(dtypeName(w->a_type)) + " ops are not compiled with schedules on the cpu target in "
                        "this version (the AMX route tunes whole GEMM functions: docs/amx.md)"});
      continue;
    }
    if (w->isConv() && convIsGemm(*w)) {
      // Tuned as a GEMM of its collapsed operands, which a library cannot apply to the conv op:
      // the direct route's default schedule.
      std::string key = w->key();
      const std::string entry_key = entryKey(op, key);
      if (!entry_of.count(entry_key)) {
        Space space = buildCpuConvSpace(*w, cpuForTargetArch(target.arch), cpuArchThreads(target.arch));
        entry_of[entry_key] = entries.size();
        entries.push_back(LibraryEntry{*w, space, defaultCpuConvCandidate(space, *w), "default", 0,
                                       LibraryEntry::Kind::Cpu, {}, {}});
        entries.back().keeps_init = !op.init_is_fill;
      }
      report.push_back({&op, key, "default", "- (1x1: tuned as a GEMM, not applied to conv ops yet)"});
      continue;
    }
    const std::string key = w->key(), entry_key = entryKey(op, key);
    if (!entry_of.count(entry_key)) {
      Result<std::optional<LibraryEntry>> entry = std::optional<LibraryEntry>{};
      if (!untuned) entry = tunedEntry(db, target, key, a.allow_stale, machineFilter(a.machine, target.isGpu()));
      if (entry && !*entry && w->weights && !untuned) {
        // None tuned with B as a weight: one tuned with B as an operand (tune --op gemm without
        // --weights, databases made before the :weights keys) is a valid schedule too.
        GemmWorkload plain = *w;
        plain.weights = false;
        entry = tunedEntry(db, target, plain.key(), a.allow_stale, machineFilter(a.machine, target.isGpu()));
      }
      if (!entry) return fail(entry.error());
      if (!*entry) {
        Space space = spaceFor(*w, target).space;
        *entry = LibraryEntry{*w, space, defaultCpuCandidate(space, *w), "default", w->batched() ? w->batch : 0,
                              LibraryEntry::Kind::Cpu, {}, {}};
      }
      (*entry)->keeps_init = !op.init_is_fill;
      entry_of[entry_key] = entries.size();
      entries.push_back(std::move(**entry));
    }
    report.push_back(reportLine(op, key, entries[entry_of[entry_key]]));
  }
  // The entries that keep their op's init last: their matchers (no fill required) would also take
  // the ops of the same workload whose init is a fill.
  std::stable_partition(entries.begin(), entries.end(), [](const LibraryEntry& e) { return !e.keeps_init; });
  auto lib = compileLibrary(entries, a);
  if (!lib) return fail(lib.error());
  const std::string& library = *lib;
  if (a.profile && (a.out.size() < 3 || a.out.compare(a.out.size() - 3, 3, ".so") != 0))
    return fail("--profile writes a shared object (-o OUT.so): " + a.out + " is not one");
  CompileOutcome c = compileModuleCpu(text, library, a.out, 1, /*fuse_elementwise=*/true, a.profile);
  if (!c.ok) return fail(a.input + ": compilation failed at " + c.stage + ": " + c.message.substr(0, 2000));
  if (a.profile) {
    auto sig = mlirSignature(text);
    if (!sig) return fail(a.input + ": " + sig.error());
    if (auto st = writeProfileSidecar(a.out, c.profiled_ops, *sig); !st) return fail(st.error());
  }

  if (!print) return 0;
  printReport(report, 20, 24, 42, 22);
  if (ops.empty()) printf("(no GEMM-like ops found: compiled with the plain lowering)\n");
  printf("wrote %s (%s, compiled in %.2f s)\n", a.out.c_str(), target.key().c_str(), c.seconds);
  if (a.profile)
    printf("each of its %zu ops is timed on every call (described in %s): tune profile %s\n", c.profiled_ops.size(),
           profileSidecar(a.out).c_str(), a.out.c_str());
  printf("'expected' is the GFLOP/s measured for the tuned schedule when it was recorded, not a measurement of this "
         "module.\n");
  return 0;
}

}  // namespace sextant::cli
