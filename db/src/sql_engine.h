// Private to db/src: the two database engines behind one small interface, so that the schedule
// database's SQL (database.cpp) is one text for both. Statements use `?` placeholders (the
// PostgreSQL engine numbers them $1, $2, ... outside string literals); migrations are written in
// SQLite's DDL and mapped to PostgreSQL types by pgDdl().
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sextant/common/result.h"

namespace sextant::dbengine {

// One statement: bind parameters (1-based), then step through its rows.
class Stmt {
 public:
  virtual ~Stmt() = default;
  virtual bool ok() const = 0;  // prepared
  virtual Stmt& bind(int i, const std::string& v) = 0;
  virtual Stmt& bind(int i, int64_t v) = 0;
  virtual Stmt& bind(int i, double v) = 0;
  virtual Stmt& bindNull(int i) = 0;
  Stmt& bind(int i, int v) { return bind(i, int64_t(v)); }
  virtual bool row() = 0;   // the next row; false at the end or on an error (see failed())
  virtual bool done() = 0;  // runs a statement without rows (or takes its first row); false on error
  virtual std::string text(int c) const = 0;
  virtual int64_t i64(int c) const = 0;
  virtual double f64(int c) const = 0;
  virtual std::string error() const = 0;
  virtual bool failed() const = 0;  // after a `while (row())` loop: stopped on an error
};

class Conn {
 public:
  virtual ~Conn() = default;
  virtual std::string engine() const = 0;  // "sqlite" or "postgresql"
  virtual std::unique_ptr<Stmt> prepare(const std::string& sql) = 0;
  virtual Status exec(const std::string& sql) = 0;  // one or more statements, no parameters
  // A write transaction that serialises with every other writer (SQLite: BEGIN IMMEDIATE;
  // PostgreSQL: BEGIN plus a transaction-scoped advisory lock).
  virtual Status beginWrite() = 0;
  // The user tables of the database (to tell a fresh database, a Sextant one, and a foreign one).
  virtual Result<std::vector<std::string>> tables() = 0;
  // The DDL of a migration as this engine needs it.
  virtual std::string ddl(const std::string& sqlite_ddl) const = 0;
  // An SQL expression for the database's clock in seconds since the epoch (the server's, for
  // PostgreSQL: leases and heartbeats never use a client's clock).
  virtual std::string nowSql() const = 0;
  // Turns an engine message into one a user can act on.
  virtual std::string explain(const std::string& msg) const = 0;
  // Is this error a lock or serialisation conflict worth retrying?
  virtual bool retryable(const std::string& msg) const = 0;
  // After an error: was the connection lost (the server restarted or went away)? Then reconnect,
  // waiting up to `wait_s` with a message on stderr; true once connected again (the transaction
  // in flight was rolled back by the server: the caller runs it again).
  virtual bool lostAndReconnected(const std::string& msg, double wait_s) { return false; }
};

// A prepared statement of the database's engine, used by value.
class Query {
 public:
  Query(const std::unique_ptr<Conn>& c, const std::string& sql) : p_(c->prepare(sql)) {}
  bool ok() const { return p_->ok(); }
  template <typename T>
  Query& bind(int i, const T& v) {
    p_->bind(i, v);
    return *this;
  }
  Query& bindNull(int i) {
    p_->bindNull(i);
    return *this;
  }
  bool row() { return p_->row(); }
  bool done() { return p_->done(); }
  std::string text(int c) const { return p_->text(c); }
  int64_t i64(int c) const { return p_->i64(c); }
  double f64(int c) const { return p_->f64(c); }
  std::string error() const { return p_->error(); }
  bool failed() const { return p_->failed(); }

 private:
  std::unique_ptr<Stmt> p_;
};

// `path`: a SQLite file; errors name it.
Result<std::unique_ptr<Conn>> openSqlite(const std::string& path, bool create);
// `url`: postgresql://USER[:PASSWORD]@HOST[:PORT]/NAME[?param=value...] (libpq's URI form).
// Connects within 10 s or fails with one line.
Result<std::unique_ptr<Conn>> openPostgres(const std::string& url);
bool isPostgresUrl(const std::string& s);
// The URL with its password masked (for messages and `path()`).
std::string shownUrl(const std::string& url);

// SQLite DDL -> PostgreSQL: INTEGER PRIMARY KEY -> BIGINT identity, INTEGER -> BIGINT, REAL -> DOUBLE PRECISION.
std::string pgDdl(const std::string& sqlite_ddl);
// `?` -> $1, $2, ... outside single-quoted literals.
std::string pgPlaceholders(const std::string& sql);

}  // namespace sextant::dbengine
