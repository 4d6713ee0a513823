#include "actors/tools/docs.hpp"

#include <algorithm>

#include "storage/fulltext_index.hpp"

namespace voxos::docs {

using json = nlohmann::json;

namespace {

/// The document's first heading, or its id.
std::string title_of(const shipped_doc& doc) {
  for (std::size_t pos = 0; pos < doc.text.size();) {
    auto end = doc.text.find('\n', pos);
    auto line =
      doc.text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    if (line.rfind("# ", 0) == 0)
      return std::string{line.substr(2)};
    if (end == std::string_view::npos)
      break;
    pos = end + 1;
  }
  return std::string{doc.id};
}

struct section {
  std::string heading;
  std::string text;
};

/// The document cut at its headings (text before the first one is a section
/// under the document's title).
std::vector<section> sections_of(const shipped_doc& doc) {
  std::vector<section> out{{title_of(doc), {}}};
  for (std::size_t pos = 0; pos < doc.text.size();) {
    auto end = doc.text.find('\n', pos);
    auto line =
      doc.text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    if (!line.empty() && line.front() == '#') {
      auto text = line.find_first_not_of('#');
      out.push_back({std::string{line.substr(std::min(line.size(), text + 1))}, {}});
    } else {
      out.back().text.append(line).push_back('\n');
    }
    if (end == std::string_view::npos)
      break;
    pos = end + 1;
  }
  return out;
}

} // namespace

docs_index::~docs_index() = default;

result<std::unique_ptr<docs_index>> docs_index::build(std::vector<shipped_doc> docs) {
  auto index = fulltext_index::open({});
  if (!index)
    return index.error();
  std::unique_ptr<docs_index> out{new docs_index};
  out->docs_ = std::move(docs);
  out->index_ = std::move(*index);
  for (const auto& doc : out->docs_) {
    auto title = title_of(doc);
    auto parts = sections_of(doc);
    for (std::size_t idx = 0; idx < parts.size(); ++idx) {
      if (parts[idx].text.find_first_not_of(" \n") == std::string::npos && idx == 0)
        continue;
      fulltext_document entry;
      entry.key = std::string{doc.id} + "#" + std::to_string(idx);
      entry.fields = {{"heading", parts[idx].heading, 4}, {"text", parts[idx].text, 1}};
      entry.data =
        json{{"doc_id", doc.id}, {"title", title}, {"section", parts[idx].heading}}.dump();
      if (auto put = out->index_->put(entry); !put)
        return put;
    }
  }
  return out;
}

const docs_index& docs_index::node() {
  static const std::unique_ptr<docs_index> index = [] {
    auto built = build(shipped());
    // The shipped documents are part of the binary: an index that cannot be
    // built from them is a broken build, not an input to refuse.
    return built ? std::move(*built) : std::unique_ptr<docs_index>{};
  }();
  return *index;
}

tool_outcome docs_index::search(const json& args) const {
  auto query = args.at("query").get<std::string>();
  std::size_t limit = args.contains("limit") ? args["limit"].get<std::size_t>() : 5;
  std::lock_guard<std::mutex> guard{lock_};
  auto hits = index_->search(query, limit);
  if (!hits)
    return tool_outcome::error(hits.error().code() == errc::out_of_range ? "query_too_large"
                                                                         : "unavailable",
                               hits.error().message());
  json results = json::array();
  for (const auto& hit : *hits) {
    auto data = json::parse(hit.data);
    results.push_back({{"doc_id", data["doc_id"]},
                       {"title", data["title"]},
                       {"section", data["section"]},
                       {"excerpt", hit.snippet}});
  }
  return tool_outcome::ok({{"results", std::move(results)}});
}

tool_outcome docs_index::read(const json& args) const {
  auto id = args.at("doc_id").get<std::string>();
  auto found =
    std::find_if(docs_.begin(), docs_.end(), [&](const shipped_doc& doc) { return doc.id == id; });
  if (found == docs_.end()) {
    json ids = json::array();
    for (const auto& doc : docs_)
      ids.push_back(doc.id);
    return tool_outcome::error("not_found", "no product document has that ID; the documents are "
                                              + ids.dump() + ".");
  }
  bool cut = found->text.size() > max_read_bytes;
  auto end = std::min(found->text.size(), max_read_bytes);
  // (never inside a UTF-8 sequence: back to the start of the one cut)
  while (cut && end > 0 && (static_cast<unsigned char>(found->text[end]) & 0xC0) == 0x80)
    --end;
  auto text = found->text.substr(0, end);
  return tool_outcome::ok(
    {{"doc_id", found->id}, {"title", title_of(*found)}, {"text", text}, {"truncated", cut}});
}

} // namespace voxos::docs
