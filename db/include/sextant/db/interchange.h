// Moving records between machines and databases: a JSON-lines format (one self-describing
// record a line, after a header line), import with duplicate detection, and merge.
//
// Duplicates are recognised by workload + target + knob values + source and the measurement
// itself (all repetition times and the time stamp): importing the same file twice adds nothing,
// and a different measurement of the same candidate is kept beside the existing one (a
// "conflict", counted, never overwritten). Merging is therefore order-independent.
#pragma once

#include <string>

#include "sextant/db/database.h"

namespace sextant {

// Version 2 (issue #35): each record names its machine and carries its confirmations. Version-1
// files still import (their machine is what legacyMachineOf reads from their fields).
constexpr int kRecordsFormatVersion = 2;

struct ExportOptions {
  std::string target_key;          // empty: every target
  std::string workload_key;        // empty: every workload
  bool include_predicted = false;  // predicted records are skipped unless asked for
  bool include_failures = true;    // failure records are data too
  std::string machine;             // measured records of these machines only (machineMatches; "": all)
};

// Deterministic: the same records give the same text, whatever order they were inserted in.
Result<std::string> exportRecordsJsonl(Database& db, const ExportOptions& o);

struct ImportStats {
  int64_t read = 0, inserted = 0, duplicates = 0, conflicts = 0;
};

// `name` is used in error messages ("FILE:LINE: ..."). All or nothing: a bad line imports nothing.
Result<ImportStats> importRecordsJsonl(Database& db, const std::string& text, const std::string& name);

// Imports every record of `from` into `into`.
Result<ImportStats> mergeDatabase(Database& into, Database& from);

}  // namespace sextant
