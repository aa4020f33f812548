// A throw-away PostgreSQL server for tests (issue #17: real PostgreSQL, no mock): Debian's
// `postgresql` package, a cluster created in a temporary folder with initdb, started with pg_ctl
// on 127.0.0.1 and a free port, stopped and removed at the end. As root (CI, this VM) the server
// runs as the `postgres` user the package creates (initdb refuses root).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace sextant::pgtest {

class PgServer {
 public:
  // Empty error(): running; url() connects as the superuser `sextant` to database `sextant_test`.
  PgServer() {
    std::string bin;
    for (const auto& e : std::filesystem::directory_iterator("/usr/lib/postgresql", ec_))
      if (std::filesystem::exists(e.path() / "bin/initdb") && e.path().string() > bin) bin = e.path().string();
    if (bin.empty()) {
      error_ = "no PostgreSQL server under /usr/lib/postgresql (scripts/setup.sh installs Debian's postgresql)";
      return;
    }
    bin_ = bin + "/bin/";
    dir_ = (std::filesystem::temp_directory_path() / ("sextant-pg-" + std::to_string(getpid()) + "-" +
                                                       std::to_string(counter()++)))
               .string();
    std::filesystem::remove_all(dir_, ec_);
    std::filesystem::create_directories(dir_);
    if (geteuid() == 0) {
      struct passwd* pw = getpwnam("postgres");
      if (!pw) {
        error_ = "running as root and there is no `postgres` user to run the server";
        return;
      }
      if (chown(dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
        error_ = "cannot hand " + dir_ + " to postgres";
        return;
      }
      as_ = "runuser -u postgres -- ";
    }
    port_ = freePort();
    if (!sh(bin_ + "initdb -D " + dir_ + "/data -A trust -U sextant --no-sync -E UTF8 > " + dir_ + "/initdb.log 2>&1")) {
      error_ = "initdb failed (see " + dir_ + "/initdb.log)";
      return;
    }
    if (!sh(bin_ + "pg_ctl -D " + dir_ + "/data -w -l " + dir_ + "/server.log -o \"-p " + std::to_string(port_) + " -k " +
            dir_ + " -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=60\" start > /dev/null 2>&1")) {
      error_ = "pg_ctl start failed (see " + dir_ + "/server.log)";
      return;
    }
    running_ = true;
    if (!createDatabase("sextant_test")) error_ = "createdb failed";
  }
  ~PgServer() {
    if (running_) stop();
    std::filesystem::remove_all(dir_, ec_);
  }
  const std::string& error() const { return error_; }
  int port() const { return port_; }
  std::string url(const std::string& db = "sextant_test") const {
    return "postgresql://sextant@127.0.0.1:" + std::to_string(port_) + "/" + db;
  }
  bool createDatabase(const std::string& name) {
    return sh(bin_ + "createdb -h 127.0.0.1 -p " + std::to_string(port_) + " -U sextant " + name + " > /dev/null 2>&1");
  }
  // SQL through psql (tests that need a foreign table, a newer schema ...).
  bool psql(const std::string& db, const std::string& sql) {
    return std::system(("psql -q -h 127.0.0.1 -p " + std::to_string(port_) + " -U sextant -d " + db + " -c \"" + sql +
                        "\" > /dev/null 2>&1")
                           .c_str()) == 0;
  }
  void stop() {
    sh(bin_ + "pg_ctl -D " + dir_ + "/data -m immediate -w stop > /dev/null 2>&1");
    running_ = false;
  }
  bool start() {
    running_ = sh(bin_ + "pg_ctl -D " + dir_ + "/data -w -l " + dir_ + "/server.log -o \"-p " + std::to_string(port_) +
                  " -k " + dir_ + " -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=60\" start > /dev/null 2>&1");
    return running_;
  }

  static int freePort() {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    int port = 0;
    if (bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0)
      port = ntohs(a.sin_port);
    close(s);
    return port;
  }

 private:
  bool sh(const std::string& cmd) {
    std::string full = as_.empty() ? cmd : as_ + "sh -c '" + cmd + "'";
    return std::system(full.c_str()) == 0;
  }
  static int& counter() {
    static int n = 0;
    return n;
  }
  std::string bin_, dir_, as_, error_;
  int port_ = 0;
  bool running_ = false;
  std::error_code ec_;
};

}  // namespace sextant::pgtest
