// A fresh temporary directory per test, removed on destruction.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace voxos::test {

class temp_dir {
public:
  temp_dir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "voxos-test-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr)
      std::abort();
    path_ = tmpl;
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  const std::filesystem::path& path() const noexcept { return path_; }
  std::string str() const { return path_.string(); }

private:
  std::filesystem::path path_;
};

} // namespace voxos::test
