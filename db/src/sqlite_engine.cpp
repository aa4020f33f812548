// The SQLite engine (the embedded default): WAL, 30 s busy timeout.
#include <sqlite3.h>
#include <sys/stat.h>

#include "sql_engine.h"

namespace sextant::dbengine {
namespace {

class SqliteStmt : public Stmt {
 public:
  SqliteStmt(sqlite3* db, const std::string& sql) : db_(db) { rc_ = sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr); }
  ~SqliteStmt() override { sqlite3_finalize(s_); }
  bool ok() const override { return s_ != nullptr && rc_ == SQLITE_OK; }
  Stmt& bind(int i, const std::string& v) override {
    sqlite3_bind_text(s_, i, v.c_str(), int(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& bind(int i, int64_t v) override {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  Stmt& bind(int i, double v) override {
    sqlite3_bind_double(s_, i, v);
    return *this;
  }
  Stmt& bindNull(int i) override {
    sqlite3_bind_null(s_, i);
    return *this;
  }
  bool row() override { return s_ && (rc_ = sqlite3_step(s_)) == SQLITE_ROW; }
  bool done() override {
    if (!s_) return false;
    rc_ = sqlite3_step(s_);
    return rc_ == SQLITE_DONE || rc_ == SQLITE_ROW;
  }
  std::string text(int c) const override {
    auto p = sqlite3_column_text(s_, c);
    return p ? reinterpret_cast<const char*>(p) : "";
  }
  int64_t i64(int c) const override { return sqlite3_column_int64(s_, c); }
  double f64(int c) const override { return sqlite3_column_double(s_, c); }
  std::string error() const override { return sqlite3_errmsg(db_); }
  bool failed() const override { return rc_ != SQLITE_DONE && rc_ != SQLITE_ROW && rc_ != SQLITE_OK; }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
  int rc_;
};

class SqliteConn : public Conn {
 public:
  SqliteConn(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  ~SqliteConn() override { sqlite3_close(db_); }
  std::string engine() const override { return "sqlite"; }
  std::unique_ptr<Stmt> prepare(const std::string& sql) override { return std::make_unique<SqliteStmt>(db_, sql); }
  Status exec(const std::string& sql) override {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : sqlite3_errmsg(db_);
      sqlite3_free(err);
      return Error{explain(msg)};
    }
    return okStatus();
  }
  Status beginWrite() override { return exec("BEGIN IMMEDIATE"); }
  Result<std::vector<std::string>> tables() override {
    SqliteStmt q(db_, "SELECT name FROM sqlite_master WHERE type='table'");
    if (!q.ok()) return Error{explain(q.error())};
    std::vector<std::string> out;
    while (q.row()) out.push_back(q.text(0));
    if (q.failed()) return Error{explain(q.error())};
    return out;
  }
  std::string ddl(const std::string& sqlite_ddl) const override { return sqlite_ddl; }
  std::string nowSql() const override { return "((julianday('now') - 2440587.5) * 86400.0)"; }
  std::string explain(const std::string& msg) const override {
    if (msg.find("file is not a database") != std::string::npos)
      return path_ + ": not a SQLite database (the file exists but is something else, or is corrupt)";
    if (msg.find("readonly") != std::string::npos || msg.find("read-only") != std::string::npos)
      return path_ + ": the database is not writable (" + msg + ")";
    if (msg.find("unable to open") != std::string::npos)
      return path_ + ": cannot open the database file (does its directory exist and is it writable?)";
    if (msg.find("malformed") != std::string::npos) return path_ + ": the database is corrupt (" + msg + ")";
    if (msg.rfind(path_ + ":", 0) == 0) return msg;
    return path_ + ": " + msg;
  }
  bool retryable(const std::string& msg) const override {
    return msg.find("database is locked") != std::string::npos || msg.find("busy") != std::string::npos;
  }

 private:
  sqlite3* db_;
  std::string path_;
};

}  // namespace

Result<std::unique_ptr<Conn>> openSqlite(const std::string& path, bool create) {
  struct stat st;
  bool exists = stat(path.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) return Error{path + ": is a directory, not a database file"};
  if (!exists && !create) return Error{path + ": no such database"};
  sqlite3* db = nullptr;
  int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_FULLMUTEX;
  if (sqlite3_open_v2(path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    SqliteConn tmp(db, path);
    return Error{tmp.explain(msg)};
  }
  sqlite3_busy_timeout(db, 30000);
  auto c = std::make_unique<SqliteConn>(db, path);
  // Reading the schema is the first real access: a non-SQLite file fails here.
  {
    SqliteStmt q(db, "SELECT count(*) FROM sqlite_master");
    if (!q.ok() || !q.row()) return Error{c->explain(q.error())};
  }
  return std::unique_ptr<Conn>(std::move(c));
}

}  // namespace sextant::dbengine
