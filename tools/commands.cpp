#include "commands.h"

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
#include "sextant/common/strings.h"
#include "sextant/costmodel/features.h"
#include "sextant/costmodel/model.h"
#include "sextant/db/database.h"
#include "sextant/db/interchange.h"
#include "sextant/hwspec/devices.h"
#include "sextant/hwspec/target.h"

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

int fail(const std::string& msg) {
  std::string m = msg;
  std::replace(m.begin(), m.end(), '\n', ' ');
  std::cerr << "tune: error: " << m << "\n";
  return 2;
}

namespace {

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

int majorOf(const std::string& version) { return std::atoi(version.c_str()); }

// A tuned record turned into a library entry; empty error = usable. `stale` explains why the
// record may no longer compile as measured.
struct Resolved {
  std::optional<LibraryEntry> entry;
  std::string stale;  // non-empty: why it is stale
  std::string error;  // non-empty: unusable
};

// The schedule space a target tunes a workload in, and the library kind of its schedules.
struct TargetSpace {
  Space space;
  LibraryEntry::Kind kind = LibraryEntry::Kind::Cpu;
  std::string error;
};
TargetSpace spaceFor(const GemmWorkload& w, const Target& t) {
  if (!t.isGpu()) return {buildCpuGemmSpace(w, cpuForTargetArch(t.arch), cpuArchThreads(t.arch)), LibraryEntry::Kind::Cpu, ""};
  auto g = gpuTargetInfo(t);
  if (!g) return {Space(), LibraryEntry::Kind::Cpu, g.error()};
  return {buildGpuGemmSpace(w, *g),
          t.kind == TargetKind::Nvidia ? LibraryEntry::Kind::Nvidia : LibraryEntry::Kind::Amd, ""};
}

Resolved resolveRecord(const RecordRow& r, const Target& target) {
  Resolved out;
  auto w = parseWorkloadKey(r.workload_key);
  if (!w) {
    out.error = w.error();
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
  else if (!r.schedule.empty() && r.schedule != (target.isGpu() ? emitGpuGemmSchedule(*w, space, *cand)
                                                                  : emitCpuGemmSchedule(*w, space, *cand)))
    out.stale = "the schedule generator changed since it was measured";
  LibraryEntry e{*w, space, *cand, r.source == "predicted" ? "predicted" : "tuned", 0, ts.kind, {}};
  e.provenance["record"] = std::to_string(r.id);
  char g[32];
  snprintf(g, sizeof g, "%.1f", r.gflops);
  e.provenance["gflops"] = r.source == "predicted" ? "predicted" : g;
  e.provenance["measured_at"] = r.created_at;
  e.provenance["tool"] = r.tool_version;
  e.provenance["llvm"] = r.llvm_version;
  e.provenance["target"] = r.target_key;
  if (!out.stale.empty()) e.provenance["stale"] = out.stale;
  out.entry = std::move(e);
  return out;
}

// Best measured record per workload for a target (predicted ones only where asked for and no
// measured one exists).
Result<std::vector<RecordRow>> bestPerWorkload(Database& db, const std::string& target_key, bool include_predicted) {
  auto recs = db.allRecords(true);
  if (!recs) return Error{recs.error()};
  std::map<std::string, RecordRow> best;
  for (auto& r : *recs) {
    if (r.target_key != target_key || r.status != "ok") continue;
    if (r.source == "predicted" && !include_predicted) continue;
    auto it = best.find(r.workload_key);
    // Measured first, by GFLOP/s; predicted ones (GFLOP/s 0) by the model's score.
    auto rank = [](const RecordRow& x) {
      if (x.source == "measured") return std::make_pair(1, x.gflops);
      auto st = json::parse(x.stats, nullptr, false);
      double score = st.is_object() && st.contains("predicted") ? st["predicted"].value("score", 0.0) : 0.0;
      return std::make_pair(0, score);
    };
    if (it == best.end() || rank(r) > rank(it->second)) best[r.workload_key] = r;
  }
  std::vector<RecordRow> out;
  for (auto& [k, r] : best) out.push_back(r);
  return out;
}

}  // namespace

int cmdExport(const ExportArgs& a) {
  if (a.out.empty()) return fail("export needs -o FILE");
  if (a.format != "transform" && a.format != "json") return fail("--format must be transform or json");
  auto db = Database::open(a.db, /*create=*/false);
  if (!db) return fail(db.error());
  auto target = resolveTarget(a.target);
  if (target) target = targetWithThreads(*target, a.threads);
  if (!target) return fail(target.error());
  if (a.format == "json") {
    ExportOptions o;
    o.target_key = target->key();
    o.include_predicted = a.include_predicted;
    auto text = exportRecordsJsonl(*db, o);
    if (!text) return fail(text.error());
    int64_t n = std::count(text->begin(), text->end(), '\n') - 1;
    if (n == 0) return fail(a.db + ": nothing to export for target " + target->key());
    if (auto s = writeFileAtomically(a.out, *text); !s) return fail(s.error());
    std::cout << "wrote " << n << " records for " << target->key() << " to " << a.out << "\n";
    return 0;
  }

  auto best = bestPerWorkload(*db, target->key(), a.include_predicted);
  if (!best) return fail(best.error());
  if (best->empty()) return fail(a.db + ": nothing to export: no measured schedule for target " + target->key());
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
  auto lib = emitTransformLibrary(entries, "Sextant tuned schedules for " + target->key() + " from " + a.db);
  if (!lib) return fail(lib.error());
  // Never write a library that mlir-opt cannot parse.
  if (auto s = validateTransformLibrary(*lib); !s) return fail("internal error: " + s.error());
  if (auto s = writeFileAtomically(a.out, *lib); !s) return fail(s.error());
  std::cout << "wrote " << entries.size() << " tuned schedule" << (entries.size() == 1 ? "" : "s") << " for "
            << target->key() << " to " << a.out << "\n";
  for (const auto& e : entries)
    std::cout << "  " << e.workload.key() << "  " << e.provenance.at("gflops") << " GFLOP/s  (record "
              << e.provenance.at("record") << ", " << e.source << ")\n";
  const bool own_pass = lib->find("\"sextant-") != std::string::npos;  // MFMA, bf16 mma.sync: needs sextant-opt
  std::cout << "apply with: " << (own_pass ? "sextant-opt (mlir-opt with Sextant's passes; a stock mlir-opt lacks them)" : "mlir-opt") << " IN.mlir --transform-preload-library=transform-library-paths=" << a.out << " --transform-interpreter\n";
  if (target->isGpu()) {
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
  auto db = Database::open(db_path);
  if (!db) return fail(db.error());
  auto st = importRecordsJsonl(*db, *text, file);
  if (!st) return fail(st.error());
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
  printf("%-*s %-*s %-*s %-*s %s\n", op_w, "op", loc_w, "location", key_w, "workload", source_w, "schedule",
         "expected");
  for (const auto& l : report) {
    std::string loc = l.op->location;
    if (int(loc.size()) > loc_w) loc = "..." + loc.substr(loc.size() - size_t(loc_w - 3));
    printf("%-*s %-*s %-*s %-*s %s\n", op_w, l.op->op_name.c_str(), loc_w, loc.c_str(), key_w, l.key.c_str(), source_w,
           l.source.c_str(), l.expected.c_str());
  }
}

// The workload of a contraction tune compile supports (error: why it has none).
Result<GemmWorkload> workloadOf(const FoundOp& op) {
  GemmWorkload w;
  w.m = op.m, w.n = op.n, w.k = op.k;
  auto at = parseDType(op.a_type), bt = parseDType(op.b_type), ct = parseDType(op.c_type);
  if (!at || !bt || !ct) return Error{"element types " + op.a_type + "/" + op.b_type + "/" + op.c_type};
  w.a_type = *at, w.b_type = *bt, w.c_type = *ct;
  w.layout = *parseLayout(op.layout);
  return w;
}

// The database's best usable record for a workload as a library entry; none (with a warning if
// the record is stale or unusable) means the default schedule.
Result<std::optional<LibraryEntry>> tunedEntry(Database& db, const Target& target, const std::string& key) {
  auto best = db.best(key, target.key());
  if (!best) return Error{best.error()};
  if (!*best) return std::optional<LibraryEntry>{};
  Resolved res = resolveRecord(**best, target);
  if (res.error.empty() && res.stale.empty()) return std::move(res.entry);
  std::cerr << "tune: warning: " << key << ": the tuned record is not usable ("
            << (res.error.empty() ? res.stale : res.error) << "); using the default schedule\n";
  return std::optional<LibraryEntry>{};
}

// The library tune compile applies (empty: no entries), also written to --emit-library.
Result<std::string> compileLibrary(const std::vector<LibraryEntry>& entries, const CompileArgs& a) {
  if (entries.empty()) return std::string();
  auto lib = emitTransformLibrary(entries, "schedules applied by tune compile to " + a.input);
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
  std::vector<LibraryEntry> entries;
  std::map<std::string, size_t> entry_of;       // workload key -> entry
  std::map<std::string, std::string> gemm_in;   // function -> location of its scheduled GEMM
  std::vector<std::string> problems;
  std::vector<ReportLine> report;
  for (const FoundOp& op : ops) {
    const std::string where = op.op_name + " at " + op.location;
    if (!op.supported) {
      problems.push_back(where + ": " + op.reason);
      continue;
    }
    if (op.batch > 0) {
      problems.push_back(where + ": batched GEMMs have no GPU schedule yet");
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
    const std::string key = w->key();
    if (!entry_of.count(key)) {
      auto entry = tunedEntry(db, target, key);
      if (!entry) return fail(entry.error());
      if (!*entry) {
        Space space = buildGpuGemmSpace(*w, *g);
        Candidate c = defaultGpuCandidate(space);
        if (space.size() == 0 || !planGpuGemm(*w, space, c)) {
          problems.push_back(where + ": no GPU schedule fits " + w->shapeString() +
                             " (M, N and K must be multiples of 16)");
          continue;
        }
        *entry = LibraryEntry{*w, space, c, "default", 0,
                              target.kind == TargetKind::Nvidia ? LibraryEntry::Kind::Nvidia : LibraryEntry::Kind::Amd,
                              {}};
      }
      entry_of[key] = entries.size();
      entries.push_back(std::move(**entry));
    }
    report.push_back(reportLine(op, key, entries[entry_of[key]]));
  }
  if (!problems.empty())
    return fail(a.input + ": cannot compile for " + target.name + ": " + join(problems, "; "));
  if (entries.empty()) return fail(a.input + ": no GEMM-like op to compile for " + target.name);
  auto lib = compileLibrary(entries, a);
  if (!lib) return fail(lib.error());

  GpuModuleRequest req;
  req.nvidia = target.kind == TargetKind::Nvidia;
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
    std::string file = a.out + "." + k.host_function + (req.nvidia ? ".ptx" : ".hsaco");
    if (auto s = writeFileAtomically(file, k.object); !s) return fail(s.error());
    std::string res;
    if (!req.nvidia) {
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
  printf("wrote %s (%s: host code in the LLVM dialect, kernels as gpu.binary %s; compiled in %.2f s)\n", a.out.c_str(),
         target.key().c_str(), req.nvidia ? "PTX" : "HSACO", c.seconds);
  printf("'expected' is the GFLOP/s measured for the tuned schedule when it was recorded, not a measurement of this "
         "module.\n");
  return 0;
}

}  // namespace

int cmdCompile(const CompileArgs& a) {
  auto target = resolveTarget(a.target);
  if (target) target = targetWithThreads(*target, a.threads);
  if (!target) return fail(target.error());
  if (a.out.empty())
    return fail(target->isGpu() ? "compile needs -o OUT.mlir (the lowered module; kernels are also written beside it)"
                                : "compile needs -o OUT (.so for a shared object, .o for an object file)");
  auto text = readFile(a.input);
  if (!text) return fail(text.error());
  auto ops = findGemmOps(*text, a.input);
  if (!ops) return fail(ops.error());
  auto db = Database::open(a.db, /*create=*/false);
  if (!db) return fail(db.error());
  if (target->isGpu()) return compileForGpu(a, *target, *text, *ops, *db);

  std::vector<LibraryEntry> entries;
  std::map<std::string, size_t> entry_of;  // workload key -> entry
  std::vector<ReportLine> report;
  for (const FoundOp& op : *ops) {
    if (!op.supported) {
      report.push_back({&op, "", "untouched", op.reason});
      continue;
    }
    auto w = workloadOf(op);
    if (!w) {
      report.push_back({&op, "", "untouched", w.error()});
      continue;
    }
    std::string key = w->key();
    if (op.batch > 0) {
      // Batched GEMMs are not tuned yet: every batch element runs the default schedule.
      key = "batch " + std::to_string(op.batch) + " x " + key;
      if (!entry_of.count(key)) {
        Space space = spaceFor(*w, *target).space;
        LibraryEntry e{*w, space, defaultCpuCandidate(space), "default", op.batch, LibraryEntry::Kind::Cpu, {}};
        entry_of[key] = entries.size();
        entries.push_back(std::move(e));
      }
      report.push_back({&op, key, "default", "-"});
      continue;
    }
    if (!entry_of.count(key)) {
      auto entry = tunedEntry(*db, *target, key);
      if (!entry) return fail(entry.error());
      if (!*entry) {
        Space space = spaceFor(*w, *target).space;
        *entry = LibraryEntry{*w, space, defaultCpuCandidate(space), "default", 0, LibraryEntry::Kind::Cpu, {}};
      }
      entry_of[key] = entries.size();
      entries.push_back(std::move(**entry));
    }
    report.push_back(reportLine(op, key, entries[entry_of[key]]));
  }
  auto lib = compileLibrary(entries, a);
  if (!lib) return fail(lib.error());
  const std::string& library = *lib;
  CompileOutcome c = compileModuleCpu(*text, library, a.out);
  if (!c.ok) return fail(a.input + ": compilation failed at " + c.stage + ": " + c.message.substr(0, 2000));

  printReport(report, 20, 24, 42, 22);
  if (ops->empty()) printf("(no GEMM-like ops found: compiled with the plain lowering)\n");
  printf("wrote %s (%s, compiled in %.2f s)\n", a.out.c_str(), target->key().c_str(), c.seconds);
  printf("'expected' is the GFLOP/s measured for the tuned schedule when it was recorded, not a measurement of this "
         "module.\n");
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

int cmdHwShow(const std::string& name) {
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
    for (const char* f : {"avx2", "fma", "avx512f", "avx512bw", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16"})
      if (c.hasFlag(f)) notable.push_back(f);
    printf("  features         %s\n", join(notable, " ").c_str());
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
