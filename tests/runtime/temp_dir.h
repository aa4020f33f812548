// A temporary directory removed with everything in it when the test ends.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& name) {
    std::string tmpl = "/tmp/sextant-" + name + "-XXXXXX";
    path = mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string str() const { return path.string(); }
};
