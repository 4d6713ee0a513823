// Reading files whole, and searching the raw files of a data directory for
// bytes: what a store keeps on disk, whatever RocksDB answers through its API.
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

namespace voxos::test {

/// Every byte of the file at `path` ("" when it cannot be read).
inline std::string file_bytes(const std::filesystem::path& path) {
  std::ifstream in{path, std::ios::binary};
  return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

/// The files below `dir` (recursively) whose bytes hold `needle`.
inline std::vector<std::string> files_holding(const std::filesystem::path& dir,
                                              std::string_view needle) {
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::recursive_directory_iterator{dir}) {
    if (!entry.is_regular_file())
      continue;
    auto bytes = file_bytes(entry.path());
    if (bytes.find(needle) != std::string::npos)
      out.push_back(entry.path().string());
  }
  return out;
}

} // namespace voxos::test
