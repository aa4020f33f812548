// Issue #35 end to end: records of a synthetic other machine (imported) are never this machine's
// best, export or compile, nor "already tried"; show names the machines; a failed import leaves no
// database behind; a reading command writes nothing into an empty file; the reference libraries
// are listed even when excluded, and the interrupted summary says no final comparison ran.
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sstream>

#include "helpers.h"

using json = nlohmann::json;
using namespace e2e;

namespace {

// The records of `db` as a records file, every measured one moved to machine `machine` and made
// 100x faster (times and figures agree), so that no real machine could have measured them.
std::string asOtherMachine(const std::string& db, const std::string& machine) {
  std::string file = tmp("records.jsonl");
  Outcome ex = tune("export --db " + db + " --format json --machine any -o " + file);
  EXPECT_EQ(ex.code, 0) << ex.err;
  std::istringstream in(slurp(file));
  std::ostringstream out;
  std::string line;
  bool header = true;
  while (std::getline(in, line)) {
    json j = json::parse(line);
    if (!header && j["source"] == "measured") {
      j["machine"] = machine;
      j["gflops"] = j["gflops"].get<double>() * 100;
      j["median_s"] = j["median_s"].get<double>() / 100;
      for (auto& t : j["times"]) t = t.get<double>() / 100;
      for (auto& t : j["confirmed_times"]) t = t.get<double>() / 100;
      j["confirmed_gflops"] = j["confirmed_gflops"].get<double>() * 100;
    }
    header = false;
    out << j.dump() << "\n";
  }
  std::ofstream(file) << out.str();
  return file;
}

}  // namespace

TEST(Trust, AnotherMachinesRecordsAreNeverThisMachinesFigures) {
  const std::string theirs = tmp("theirs.db"), mine = tmp("mine.db"), lib = tmp("trust-lib.mlir");
  const std::string so = tmp("trust.so");
  const std::string other = "cpu:fastcpu:avx512:GenuineIntel-6-999:512c";
  removeDb(theirs);
  removeDb(mine);
  // "Their" records: a real run here, then moved to another machine and made 100x faster.
  Outcome r = tune("--shape 64x32x16 --trials 8 --batch 4 --min-time 0.01 --strategy random --quiet --db " + theirs);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string file = asOtherMachine(theirs, other);
  Outcome imp = tune("import " + file + " --db " + mine);
  ASSERT_EQ(imp.code, 0) << imp.err;
  EXPECT_EQ(queryInt(mine, "SELECT count(*) FROM records WHERE machine='" + other + "'"), 8);

  // Nothing of this machine yet: best and export refuse, naming the other machine and the option.
  Outcome best = tune("best --shape 64x32x16 --db " + mine);
  EXPECT_NE(best.code, 0);
  EXPECT_NE(best.err.find(other), std::string::npos) << best.err;
  EXPECT_NE(best.err.find("--machine"), std::string::npos) << best.err;
  Outcome ex = tune("export --db " + mine + " -o " + lib);
  EXPECT_NE(ex.code, 0);
  EXPECT_NE(ex.err.find(other), std::string::npos) << ex.err;
  // compile uses the default schedule, not the other machine's winner.
  Outcome c = tune("compile " + std::string(DATA_DIR) + "/two_gemms.mlir --db " + mine + " -o " + so);
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_EQ(c.out.find("tuned (record"), std::string::npos) << c.out;
  // show names both: the other machine's records, and that none is this machine's.
  Outcome show = tune("show --db " + mine);
  ASSERT_EQ(show.code, 0) << show.err;
  EXPECT_NE(show.out.find(other), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("no successful measurement by this machine"), std::string::npos) << show.out;
  // With --machine the other machine's best is there, labelled.
  Outcome theirs_best = tune("best --shape 64x32x16 --machine cpu:fastcpu --db " + mine);
  ASSERT_EQ(theirs_best.code, 0) << theirs_best.err;
  EXPECT_NE(theirs_best.out.find("machine " + other), std::string::npos) << theirs_best.out;

  // Tuning here measures what the other machine tried (same seed, same proposals) and reports
  // this machine's figures only: below its FMA peak.
  Outcome t = tune("--shape 64x32x16 --trials 8 --batch 4 --min-time 0.01 --strategy random --report json --quiet "
                   "--db " + mine);
  ASSERT_EQ(t.code, 0) << t.err;
  json j = json::parse(t.out);
  EXPECT_EQ(j["trials"], 8);
  EXPECT_EQ(queryInt(mine, "SELECT count(DISTINCT candidate) FROM records WHERE machine='" + j["machine"].get<std::string>() +
                               "' AND candidate IN (SELECT candidate FROM records WHERE machine='" + other + "')"),
            8)
      << "the other machine's candidates were measured here again";
  const double peak = j["fma_peak"]["gflops"];
  EXPECT_LT(j["best"]["gflops"].get<double>(), peak * 1.05);
  EXPECT_LT(j["best_in_db"]["confirmed_gflops"].get<double>(), peak * 1.05);
  Outcome best2 = tune("best --shape 64x32x16 --db " + mine);
  ASSERT_EQ(best2.code, 0) << best2.err;
  EXPECT_NE(best2.out.find("machine " + j["machine"].get<std::string>()), std::string::npos) << best2.out;
  Outcome ex2 = tune("export --db " + mine + " -o " + lib);
  ASSERT_EQ(ex2.code, 0) << ex2.err;
  EXPECT_EQ(slurp(lib).find(other), std::string::npos) << "the library names only this machine's records";
  EXPECT_NE(slurp(lib).find(j["machine"].get<std::string>()), std::string::npos);
  Outcome c2 = tune("compile " + std::string(DATA_DIR) + "/two_gemms.mlir --db " + mine + " -o " + so);
  ASSERT_EQ(c2.code, 0) << c2.err;
  EXPECT_NE(c2.out.find("tuned (record"), std::string::npos) << c2.out;
  for (const std::string& f : {file, lib, so}) std::filesystem::remove(f);
  removeDb(theirs);
  removeDb(mine);
}

TEST(Trust, AFailedImportLeavesNoDatabaseAndShowWritesNothing) {
  const std::string db = tmp("failed-import.db"), bad = tmp("bad.jsonl");
  removeDb(db);
  std::ofstream(bad) << "{\"format\": \"sextant-records\", \"version\": 2}\n{\"workload\": 1}\n";
  Outcome imp = tune("import " + bad + " --db " + db);
  EXPECT_NE(imp.code, 0);
  EXPECT_FALSE(std::filesystem::exists(db)) << "a failed import created " << db;
  { std::ofstream empty(db); }
  Outcome show = tune("show --db " + db);
  EXPECT_NE(show.code, 0);
  EXPECT_NE(show.err.find("empty"), std::string::npos) << show.err;
  EXPECT_EQ(std::filesystem::file_size(db), 0u) << "show wrote into an empty file";
  std::filesystem::remove(bad);
  removeDb(db);
}

// An excluded (or missing) library is listed as not measured, with the reason; the reference is
// the fastest of the others. Without sextant-libref, OpenBLAS is measured in a forked child.
TEST(Trust, LibrariesNotMeasuredAreNamedWithTheReason) {
  const std::string db = tmp("libs.db");
  removeDb(db);
  Outcome r = sh("SEXTANT_REFERENCE_LIBRARIES=openblas " + std::string(TUNE_BIN) +
                 " --shape 64x64x32 --trials 3 --min-time 0.01 --report json --quiet --db " + db);
  ASSERT_EQ(r.code, 0) << r.err;
  json j = json::parse(r.out);
  int excluded = 0;
  for (const auto& l : j["libraries"])
    if (l["name"] != "openblas") {
      EXPECT_EQ(l["status"], "not measured") << l;
      EXPECT_NE(l["reason"].get<std::string>().find("SEXTANT_REFERENCE_LIBRARIES"), std::string::npos) << l;
      ++excluded;
    }
  EXPECT_GE(excluded, 2);
  EXPECT_EQ(j["reference"]["library"], "openblas");
  removeDb(db);
  Outcome n = sh("SEXTANT_LIBREF=/nonexistent/sextant-libref " + std::string(TUNE_BIN) +
                 " --shape 64x64x32 --trials 3 --min-time 0.01 --report json --quiet --db " + db);
  ASSERT_EQ(n.code, 0) << n.err;
  json k = json::parse(n.out);
  EXPECT_EQ(k["reference"]["library"], "openblas");
  for (const auto& l : k["libraries"]) EXPECT_EQ(l["status"], "not measured") << l;
  removeDb(db);
}
