// Helpers for tests that run the real `tune` binary (TUNE_BIN) as a user would.
#pragma once

#include <filesystem>
#include <fstream>
#include <sqlite3.h>
#include <string>
#include <sys/wait.h>
#include <vector>
#include <unistd.h>

namespace e2e {

// MLIR's C-interface descriptor of a rank-R f32 memref, and one over a row-major buffer (to call
// what tune compile wrote).
template <int R>
struct MemRef {
  float *alloc, *aligned;
  int64_t offset, sizes[R], strides[R];
};
template <typename... Dims>
MemRef<int(sizeof...(Dims))> rowMajor(std::vector<float>& v, Dims... dims) {
  constexpr int R = int(sizeof...(Dims));
  MemRef<R> d{v.data(), v.data(), 0, {int64_t(dims)...}, {}};
  int64_t stride = 1;
  for (int i = R - 1; i >= 0; --i) d.strides[i] = stride, stride *= d.sizes[i];
  return d;
}

struct Outcome {
  int code = -1;
  std::string out, err;
};

// A path in the temporary directory, unique to this test process.
inline std::string tmp(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("sextant-e2e-" + std::to_string(getpid()) + "-" + name)).string();
}

inline std::string slurp(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// Runs a shell command with no standard input; captures its exit code, stdout and stderr.
inline Outcome sh(const std::string& cmd) {
  std::string out = tmp("stdout"), err = tmp("stderr");
  int st = system((cmd + " >" + out + " 2>" + err + " </dev/null").c_str());
  Outcome r{WIFEXITED(st) ? WEXITSTATUS(st) : -1, slurp(out), slurp(err)};
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

inline Outcome tune(const std::string& args) { return sh(std::string(TUNE_BIN) + " " + args); }

inline void removeDb(const std::string& p) {
  for (const char* s : {"", "-wal", "-shm"}) std::filesystem::remove(p + s);
}

// The first column of the first row of a query, or -1.
inline int64_t queryInt(const std::string& db, const std::string& sql) {
  sqlite3* h;
  sqlite3_open(db.c_str(), &h);
  sqlite3_stmt* s;
  sqlite3_prepare_v2(h, sql.c_str(), -1, &s, nullptr);
  int64_t v = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
  sqlite3_finalize(s);
  sqlite3_close(h);
  return v;
}

// Every row of a query, its columns joined by " | ", one row per line (for failure messages).
inline std::string queryRows(const std::string& db, const std::string& sql) {
  sqlite3* h;
  sqlite3_open(db.c_str(), &h);
  sqlite3_stmt* s;
  std::string out;
  if (sqlite3_prepare_v2(h, sql.c_str(), -1, &s, nullptr) == SQLITE_OK) {
    while (sqlite3_step(s) == SQLITE_ROW) {
      for (int c = 0; c < sqlite3_column_count(s); ++c) {
        const unsigned char* t = sqlite3_column_text(s, c);
        out += (c ? " | " : "") + std::string(t ? reinterpret_cast<const char*>(t) : "NULL");
      }
      out += "\n";
    }
    sqlite3_finalize(s);
  }
  sqlite3_close(h);
  return out;
}

}  // namespace e2e
