#include "sextant/codegen/library.h"

#include <sstream>
#include <vector>

#include "sextant/codegen/cpu_schedule.h"
#include "sextant/codegen/gpu_schedule.h"
#include "sextant/codegen/op_schedules.h"

namespace sextant {

std::string matcherSignature(const GemmWorkload& w, int64_t batch) {
  return cpuSchedulesOf(w).matcherSignature(w, batch);
}

static std::string escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    o += c;
  }
  return o;
}

static void emitMatcher(std::ostringstream& o, size_t i, const GemmWorkload& w, int64_t batch, bool needs_fill) {
  const std::string H = "!transform.any_op";
  o << "  // " << (batch > 0 && !w.batched() ? "batch " + std::to_string(batch) + " x " : std::string()) << w.key() << "\n"
    << "  transform.named_sequence @sextant_match_" << i << "(%op: " << H << " {transform.readonly}) -> " << H << " {\n";
  cpuSchedulesOf(w).emitMatcherChecks(o, w, batch, "%op", false);
  if (needs_fill)
    o << "    // The schedule fuses the C initialisation into its tiles: it must be a linalg.fill.\n"
      << "    %init = transform.get_producer_of_operand %0[2] : (" << H << ") -> " << H << "\n"
      << "    transform.match.operation_name %init [\"linalg.fill\"] : " << H << "\n";
  o << "    transform.yield %0 : " << H << "\n"
    << "  }\n";
}

static std::string gpuTag(size_t i) { return "sextant.gpu_schedule_" + std::to_string(i); }

// (Schedules whose actions fuse the op's init into their tiles themselves, cpuActionsFuseOwnInit:
// the direct convolution route's, into its register tiles, need the init to be a fill whatever the
// thread count, and the epilogue variant leaves it to them.)

// The direct convolution route's register tiling when its fill is fused (cpu_conv.cpp).
static const char* const kConvRegisterTiles = "%t2, %r:3 = transform.structured.fuse %t1 tile_sizes [0, 1, ";

// In the actions `t`, the line that starts with `head` (its tile sizes: `head`, then the register
// sizes, then `tail`, e.g. ", 0]" or ", 0, 0") becomes one that tiles `target` (the epilogue, or its
// tile) by [`kept` + the register sizes] into `results` (`n` handles), keeping the line's
// interchange as `interchange`; whether the line was of that form.
static bool retileAsEpilogue(std::string& t, const std::string& head, const std::string& tail, const std::string& kept,
                             const std::string& results, const std::string& target, int n, const std::string& interchange) {
  const std::string H = "!transform.any_op";
  const size_t pos = t.find(head), line_end = t.find('\n', pos), sizes_end = t.find(tail, pos);
  if (pos == std::string::npos || line_end == std::string::npos || sizes_end == std::string::npos || sizes_end > line_end)
    return false;
  const std::string sizes = t.substr(pos + head.size(), sizes_end - pos - head.size());
  const bool swapped = t.substr(pos, line_end - pos).find("interchange") != std::string::npos;
  std::string types = H;
  for (int i = 1; i < n; ++i) types += ", " + H;
  t = t.substr(0, pos) + results + " = transform.structured.fuse " + target + " tile_sizes [" + kept + sizes + "]" +
      (swapped ? interchange : "") + " : (" + H + ") -> (" + types + ")" + t.substr(line_end);
  return true;
}

// Inserts `lines` after the line of `t` that contains `marker`, with that line's indentation.
static void afterLine(std::string& t, const std::string& marker, const std::vector<std::string>& lines) {
  const size_t at = t.find(marker), bol = t.rfind('\n', at) + 1;
  const std::string ind = t.substr(bol, at - bol);
  std::string text;
  for (const std::string& l : lines) text += ind + l + "\n";
  t.insert(t.find('\n', at) + 1, text);
}

// An op with its epilogue (tune compile's CPU libraries; the ONNX importer writes them so,
// frontend/src/onnx_epilogue.cpp): an all-parallel linalg.generic of the op's output rank whose
// init is the result of the workload's op (its only use), whose own init is a linalg.fill.
// Rooted at the generic, the last of the three, because foreach_match applies each action as it
// walks: an action may erase the ops before the one it matched, not those after it.
static void emitEpilogueMatcher(std::ostringstream& o, size_t i, const GemmWorkload& w, int64_t batch,
                                bool named_matmul) {
  const std::string H = "!transform.any_op", P = "!transform.param<i64>", V = "!transform.any_value";
  const int rank = cpuSchedulesOf(w).resultRank(w, batch);
  o << "  // " << w.key() << " with its epilogue (bias, activation, residual add), fused into its tiles\n"
    << "  transform.named_sequence @sextant_match_epilogue_" << i << "(%ep: " << H << " {transform.readonly}) -> (" << H
    << ", " << H << ", " << H << ") {\n"
    << "    transform.match.operation_name %ep [\"linalg.generic\"] : " << H << "\n"
    << "    %g, %acc = transform.match.structured failures(propagate) %ep : (" << H << ") -> (" << H << ", " << V << ") {\n"
    << "    ^bb0(%e: " << H << "):\n"
    << "      transform.match.structured.dim %e[all] {parallel} : " << H << "\n"
    << "      %erank = transform.match.structured.rank %e : (" << H << ") -> " << P << "\n"
    << "      %erank_want = transform.param.constant " << rank << " : i64 -> " << P << "\n"
    << "      transform.match.param.cmpi eq %erank, %erank_want : " << P << "\n"
    << "      %einit = transform.match.structured.init %e[0] : (" << H << ") -> " << V << "\n"
    << "      transform.match.structured.yield %e, %einit : " << H << ", " << V << "\n"
    << "    }\n"
    << "    %op = transform.get_defining_op %acc : (" << V << ") -> " << H << "\n";
  cpuSchedulesOf(w).emitMatcherChecks(o, w, batch, "%op", true);
  // (The epilogue in the register tiles finds the op in them by its name.)
  if (named_matmul && !cpuSchedulesOf(w).matcherChecksName()) o << "    transform.match.operation_name %0 [\"linalg.matmul\"] : " << H << "\n";
  o << "    %fill = transform.get_producer_of_operand %0[2] : (" << H << ") -> " << H << "\n"
    << "    transform.match.operation_name %fill [\"linalg.fill\"] : " << H << "\n"
    << "    transform.yield %0, %g, %fill : " << H << ", " << H << ", " << H << "\n"
    << "  }\n";
}

// A CPU schedule's actions with the epilogue fused: their forall over the op's blocks tiles the
// epilogue (%sx_ep) instead, with the same tile sizes (the op's parallel loops, in the order of its
// result's dimensions), and the op is fused into each block; the rest applies to the fused op as
// before. The op's zero fill is fused into each block too when the forall runs on several threads
// (the zeroing then runs on them all; ResNet-50 on 2 threads, Zen 5: 24.8 ms against 27.1-27.4
// with one fill before the blocks), and stays one pass before the blocks on one thread
// (MobileNetV2 on 1 thread: 4.4-4.9 ms against 5.3-5.5 with the fill in each block; ResNet-50 the
// same either way). Empty when the actions do not begin their tiling with a forall over the op
// (the transposed-B route tiles a packed op). `threaded`: the schedule's space has the threads knob
// (its forall is annotated to run on several threads).
std::string epilogueActions(const std::string& actions, bool threaded, bool* in_registers) {
  if (in_registers) *in_registers = false;
  const std::string H = "!transform.any_op";
  const std::string forall = "%t1, %blocks = transform.structured.tile_using_forall %mm ";
  const size_t at = actions.find(forall);
  if (at == std::string::npos) return std::string();
  const size_t bol = actions.rfind('\n', at) == std::string::npos ? 0 : actions.rfind('\n', at) + 1;
  const size_t eol = actions.find('\n', at);
  const std::string ind = actions.substr(bol, at - bol);
  const std::string fuse = "transform.structured.fuse_into_containing_op ", types = " : (" + H + ", " + H + ") -> (" + H + ", " + H + ")";
  std::string out = actions.substr(0, at) + "%t1_ep, %blocks_ep = transform.structured.tile_using_forall %sx_ep " +
                    actions.substr(at + forall.size(), eol - at - forall.size()) + "\n" + ind;
  if (threaded && !cpuActionsFuseOwnInit(actions))
    out += "%t1, %blocks_op = " + fuse + "%mm into %blocks_ep" + types + "\n" + ind + "%fill_tile, %blocks = " + fuse +
           "%sx_fill into %blocks_op" + types;
  else
    out += "%t1, %blocks = " + fuse + "%mm into %blocks_ep" + types;
  out += actions.substr(eol);
  // A schedule whose zero fill is in its register tiles (fusesOwnInit) computes its epilogue there
  // too: the epilogue's block is tiled with the register tile's sizes (GEMM loop orders 1 and 2:
  // by the loop over the block's other dimension first) and the op, with its fill, fused into each
  // register tile, so the epilogue reads the accumulators as they leave the reduction (folded into
  // vectors) and each output tile is written once. Otherwise the epilogue is a second pass over
  // each block, which on MobileNetV2's 16-deep expansions cost about as much as the GEMM itself
  // (docs/models.md). GEMMs: unpacked ones (any loop order, peeled register loops too); direct
  // convolutions: unchunked ones (the epilogue tiled [0, 1, reg_ow, reg_f]).
  if (!cpuActionsFuseOwnInit(actions)) return out;
  std::string t = out;
  if (t.find(kConvRegisterTiles) != std::string::npos) {
    if (!retileAsEpilogue(t, kConvRegisterTiles, ", 0, 0", "0, 1, ", "%sx_ep_reg, %r:3", "%t1_ep", 4,
                          " interchange [0, 1, 3, 2]"))
      return out;
    afterLine(t, "%sx_ep_reg, %r:3 = ",
              {"%t2 = transform.structured.match ops{[\"linalg.conv_2d_nhwc_hwcf\", \"linalg.depthwise_conv_2d_nhwc_hwc\"]} in "
               "%r#0 : (" + H + ") -> " + H,
               "transform.structured.vectorize %sx_ep_reg : " + H});
    if (in_registers) *in_registers = true;
    return t;
  }
  const std::string inner = "%t2i, %inner = transform.structured.fuse %t1 tile_sizes [";
  const bool has_inner = t.find(inner) != std::string::npos;
  const std::string reg = std::string("%t3, %r1, %r2 = transform.structured.fuse ") + (has_inner ? "%t2i" : "%t1") + " tile_sizes [";
  if (t.find(reg) == std::string::npos || actions.find("_panel =") != std::string::npos) return out;
  const bool peeled = actions.find("transform.loop.peel") != std::string::npos;
  if (has_inner && !retileAsEpilogue(t, inner, ", 0]", "", "%t2i, %inner", "%t1_ep", 2, "")) return out;
  if (!retileAsEpilogue(t, reg, ", 0]", "", "%sx_ep_reg, %r1, %r2", has_inner ? "%t2i" : "%t1_ep", 3, " interchange [1, 0]"))
    return out;
  std::vector<std::string> lines = {"%t3 = transform.structured.match ops{[\"linalg.matmul\"]} in %r1 : (" + H + ") -> " + H};
  if (!peeled) lines.push_back("transform.structured.vectorize %sx_ep_reg : " + H);
  afterLine(t, "%sx_ep_reg, %r1, %r2 = ", lines);
  if (peeled) {
    // A peeled register loop: each part's epilogue vectorized with the register tile's sizes (the
    // remainder's is not static), its contractions matched by name (the epilogue is a generic).
    const std::string both = "ops{[\"linalg.matmul\", \"linalg.generic\"]}";
    for (size_t p = t.find(both); p != std::string::npos; p = t.find(both, p)) t.replace(p, both.size(), "ops{[\"linalg.matmul\"]}");
    if (t.find("transform.structured.vectorize %sx_fill_partial") == std::string::npos) return out;
    std::vector<std::string> parts;
    for (const char* part : {"full", "partial"}) {
      parts.push_back(std::string("%sx_ep_") + part + " = transform.structured.match ops{[\"linalg.generic\"]} in %" + part +
                      " : (" + H + ") -> " + H);
      parts.push_back(std::string("transform.structured.vectorize %sx_ep_") + part + " vector_sizes [%reg_m, %reg_n] : " + H +
                      ", !transform.param<i64>, !transform.param<i64>");
    }
    afterLine(t, "transform.structured.vectorize %sx_fill_partial", parts);
  }
  if (in_registers) *in_registers = true;
  return t;
}

Result<std::string> emitTransformLibrary(const std::vector<LibraryEntry>& entries, const std::string& title,
                                         bool fuse_epilogues) {
  if (entries.empty()) return Error{"nothing to put in the library"};
  std::map<std::string, std::string> seen;
  for (const auto& e : entries) {
    auto [it, fresh] = seen.emplace(matcherSignature(e.workload, e.batch) + (e.keeps_init ? " keeps its init" : ""),
                                    e.workload.key());
    if (!fresh)
      return Error{"workloads " + it->second + " and " + e.workload.key() +
                   " differ only in layout or float format, which upstream Transform matchers cannot tell apart; "
                   "export them to separate libraries"};
  }
  std::ostringstream o;
  std::vector<size_t> epilogue;  // the entries with an epilogue variant
  o << "// " << title << "\n"
    << "// Generated by Sextant. Apply with:\n"
    << "//   mlir-opt IN.mlir --transform-preload-library=transform-library-paths=THIS_FILE "
       "--transform-interpreter\n"
    << "module attributes {transform.with_named_sequence} {\n";
  for (size_t i = 0; i < entries.size(); ++i) {
    const LibraryEntry& e = entries[i];
    const bool gpu = e.kind != LibraryEntry::Kind::Cpu;
    if (gpu && e.batch > 0 && e.kind != LibraryEntry::Kind::Vulkan)
      return Error{"batched GEMMs have GPU schedules on the vulkan target only (" + e.workload.key() + ")"};
    // (An op that accumulates into its output keeps its init: the actions do not fuse it; measured
    // actions that did are emitted again from the knobs without it.)
    const std::string actions =
        gpu ? emitGpuLibraryActions(e.workload, e.space, e.candidate, "    ", gpuTag(i))
            : cpuSchedulesOf(e.workload)
                  .libraryActions(e.space, e.candidate, e.workload, e.batch, e.keeps_init, e.actions, "    ");
    // GPU schedules and CPU ones that fuse the op's init into their tiles need it to be a fill.
    emitMatcher(o, i, e.workload, e.batch, gpu || cpuActionsFuseOwnInit(actions));
    o << "  // schedule for " << e.workload.key() << " (" << e.source;
    for (const auto& [k, v] : e.provenance) o << ", " << k << " " << v;
    o << ")\n";
    if (e.source == "predicted") o << "  // PREDICTED: chosen by the cost model, never measured on the target\n";
    o << "  // knobs: " << e.space.keyOf(e.candidate) << "\n";
    std::ostringstream attrs;
    attrs << " attributes {sextant.workload = \"" << e.workload.key() << "\", sextant.source = \"" << e.source << "\"";
    for (const auto& [k, v] : e.provenance) attrs << ", sextant." << k << " = \"" << escape(v) << "\"";
    attrs << "}";
    o << "  transform.named_sequence @sextant_apply_" << i << "(%op: !transform.any_op {transform.readonly})"
      << attrs.str() << " {\n"
      << "    %mm = transform.merge_handles %op {deduplicate} : !transform.any_op\n"
      << actions << "    transform.yield\n"
      << "  }\n";
    // (The epilogue matcher wants a fill: an op that keeps its init has no epilogue variant.)
    bool in_registers = false;
    const std::string fused = gpu || !fuse_epilogues || e.keeps_init
                                  ? std::string()
                                  : epilogueActions(actions, e.space.knobIndex("threads") >= 0, &in_registers);
    if (!fused.empty()) {
      epilogue.push_back(i);
      emitEpilogueMatcher(o, i, e.workload, e.batch, in_registers);
      const std::string H = "!transform.any_op";
      // (Arguments named apart from every handle a route's actions define: the split-K GEMV route's
      // actions define %fill, and an argument of that name made the whole library unparsable.)
      o << "  transform.named_sequence @sextant_apply_epilogue_" << i << "(%op: " << H << " {transform.readonly}, %sx_ep_in: "
        << H << " {transform.readonly}, %sx_fill_in: " << H << " {transform.readonly})" << attrs.str() << " {\n"
        << "    %mm = transform.merge_handles %op {deduplicate} : " << H << "\n"
        << "    %sx_ep = transform.merge_handles %sx_ep_in {deduplicate} : " << H << "\n"
        << "    %sx_fill = transform.merge_handles %sx_fill_in {deduplicate} : " << H << "\n"
        << fused << "    transform.yield\n"
        << "  }\n";
    }
    if (gpu)
      o << "  // " << e.workload.key() << ": the function-level part of the schedule (one GEMM per function)\n"
        << "  transform.named_sequence @sextant_lower_" << i << "(%func: !transform.any_op {transform.consumed}) {\n"
        << emitGpuLibraryLowering(e.workload, e.space, e.candidate, "    ") << "    transform.yield\n"
        << "  }\n"
        << "  // " << e.workload.key() << ": to static shared memory and the final kernel form\n"
        << "  transform.named_sequence @sextant_finish_" << i << "(%fin: !transform.any_op {transform.readonly}) {\n"
        << emitGpuLibraryFinish(e.workload, e.space, e.candidate, "    ", e.kind == LibraryEntry::Kind::Nvidia)
        << "    transform.yield\n"
        << "  }\n";
  }
  o << "  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.consumed}) {\n";
  std::string root = "%root";
  if (!epilogue.empty()) {
    // First the ops with an epilogue (matched at the epilogue), then the others.
    o << "    %fused = transform.foreach_match in %root\n";
    for (size_t k = 0; k < epilogue.size(); ++k)
      o << "        @sextant_match_epilogue_" << epilogue[k] << " -> @sextant_apply_epilogue_" << epilogue[k]
        << (k + 1 < epilogue.size() ? ",\n" : "\n");
    o << "      : (!transform.any_op) -> !transform.any_op\n";
    root = "%fused";
  }
  o << "    %done = transform.foreach_match in " << root << "\n";
  for (size_t i = 0; i < entries.size(); ++i)
    o << "        @sextant_match_" << i << " -> @sextant_apply_" << i << (i + 1 < entries.size() ? ",\n" : "\n");
  o << "      : (!transform.any_op) -> !transform.any_op\n";
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].kind == LibraryEntry::Kind::Cpu) continue;
    for (const char* stage : {"lower", "finish"}) {
      std::string h = std::string("%") + stage + "_" + std::to_string(i);
      o << "    " << h << " = transform.structured.match ops{[\"func.func\"]} attributes {" << gpuTag(i)
        << "} in %done : (!transform.any_op) -> !transform.any_op\n"
        << "    transform.include @sextant_" << stage << "_" << i << " failures(propagate) (" << h
        << ") : (!transform.any_op) -> ()\n";
    }
  }
  o << "    transform.yield\n"
    << "  }\n"
    << "}\n";
  return o.str();
}

}  // namespace sextant
