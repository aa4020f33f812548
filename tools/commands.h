// The `tune` subcommands that move schedules out of Sextant: export, import, merge, compile.
#pragma once

#include <string>

namespace sextant::cli {

struct ExportArgs {
  std::string db = "sextant.db", target = "cpu", format = "transform", out;
  bool include_predicted = false, allow_stale = false;
};
int cmdExport(const ExportArgs& a);
int cmdImport(const std::string& file, const std::string& db);
int cmdMerge(const std::string& a, const std::string& b, const std::string& out);

struct CompileArgs {
  std::string input, db = "sextant.db", target = "cpu", out;
  std::string library_out;  // also write the library that was applied
};
int cmdCompile(const CompileArgs& a);

struct ModelEvalArgs {
  std::string db = "sextant.db", target = "cpu";
  int min_records = 100;
  int seeds = 3;
};
int cmdModelEval(const ModelEvalArgs& a);

int cmdHwList();
int cmdHwShow(const std::string& name);

int fail(const std::string& msg);  // prints "tune: error: MSG", returns 2

}  // namespace sextant::cli
