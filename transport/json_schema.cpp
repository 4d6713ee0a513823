#include "transport/json_schema.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>
#include <unordered_map>
#include <utility>

namespace voxos {

using nlohmann::json;

namespace detail {

/// Bits of the `type` keyword.
enum type_bit : uint8_t {
  type_null = 1,
  type_boolean = 2,
  type_object = 4,
  type_array = 8,
  type_number = 16,
  type_string = 32,
  type_integer = 64,
};

struct compiled_regex {
  std::string source;
  std::regex re;
};

/// One compiled (sub)schema: the keywords it carries, children by pointer.
/// Pointers refer to nodes owned by the same `schema_store`.
struct schema_node {
  std::string path; ///< JSON pointer of this schema in its document
  bool is_boolean = false;
  bool boolean_value = true;

  const schema_node* ref = nullptr;
  const schema_node* dynamic_ref = nullptr;
  std::string dynamic_ref_anchor; ///< set when the static target carries this $dynamicAnchor
  /// For schema resource roots: their $dynamicAnchor names (dynamic scope).
  std::map<std::string, const schema_node*> dynamic_anchors;
  bool is_resource = false;

  uint8_t types = 0;
  std::string type_text;
  const json* enum_values = nullptr;
  const json* const_value = nullptr;

  std::vector<std::pair<std::string, const schema_node*>> properties;
  std::vector<std::pair<compiled_regex, const schema_node*>> pattern_properties;
  const schema_node* additional_properties = nullptr;
  std::vector<std::string> required;
  std::optional<size_t> min_properties, max_properties;
  const schema_node* property_names = nullptr;
  std::vector<std::pair<std::string, std::vector<std::string>>> dependent_required;
  std::vector<std::pair<std::string, const schema_node*>> dependent_schemas;
  std::string dependent_required_keyword = "dependentRequired";
  std::string dependent_schemas_keyword = "dependentSchemas";
  const schema_node* unevaluated_properties = nullptr;

  std::vector<const schema_node*> prefix_items;
  std::string prefix_keyword = "prefixItems";
  const schema_node* items = nullptr; ///< applies past the prefix
  std::string items_keyword = "items";
  std::optional<size_t> min_items, max_items;
  bool unique_items = false;
  const schema_node* contains = nullptr;
  std::optional<size_t> min_contains, max_contains;
  const schema_node* unevaluated_items = nullptr;

  std::optional<size_t> min_length, max_length;
  std::optional<compiled_regex> pattern;

  std::optional<double> minimum, maximum, exclusive_minimum, exclusive_maximum;
  std::optional<json> multiple_of;

  std::vector<const schema_node*> all_of, any_of, one_of;
  const schema_node* not_ = nullptr;
  const schema_node* if_ = nullptr;
  const schema_node* then_ = nullptr;
  const schema_node* else_ = nullptr;
};

/// Owns the schema documents and every node compiled from them.
struct schema_store {
  std::vector<std::unique_ptr<json>> documents;
  std::vector<std::unique_ptr<schema_node>> nodes;
};

} // namespace detail

namespace {

using detail::schema_node;
using detail::schema_store;

// --- URI helpers (RFC 3986 reference resolution, the subset schemas use) ---

std::string strip_fragment(const std::string& uri) {
  auto hash = uri.find('#');
  return hash == std::string::npos ? uri : uri.substr(0, hash);
}

bool has_scheme(const std::string& uri) {
  auto pos = uri.find_first_of(":/?#");
  return pos != std::string::npos && pos > 0 && uri[pos] == ':';
}

/// Removes "." and ".." segments from the path of an absolute URI.
std::string remove_dot_segments(const std::string& uri) {
  auto scheme_end = uri.find(':');
  size_t path_start = scheme_end + 1;
  if (uri.compare(path_start, 2, "//") == 0) {
    path_start = uri.find('/', path_start + 2);
    if (path_start == std::string::npos)
      return uri;
  }
  auto path_end = uri.find_first_of("?#", path_start);
  if (path_end == std::string::npos)
    path_end = uri.size();
  std::string path = uri.substr(path_start, path_end - path_start);
  if (path.find("/.") == std::string::npos)
    return uri;
  std::vector<std::string> segments;
  size_t start = 0;
  bool trailing_slash = false;
  while (start <= path.size()) {
    auto slash = path.find('/', start);
    std::string segment =
      path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    trailing_slash = false;
    if (segment == "..") {
      if (segments.size() > 1)
        segments.pop_back();
      trailing_slash = true;
    } else if (segment == ".") {
      trailing_slash = true;
    } else {
      segments.push_back(segment);
    }
    if (slash == std::string::npos)
      break;
    start = slash + 1;
  }
  std::string joined;
  for (size_t seg_idx = 0; seg_idx < segments.size(); ++seg_idx)
    joined += (seg_idx ? "/" : "") + segments[seg_idx];
  if (trailing_slash)
    joined += "/";
  return uri.substr(0, path_start) + joined + uri.substr(path_end);
}

std::string resolve_uri(const std::string& base, const std::string& ref) {
  if (ref.empty())
    return strip_fragment(base);
  if (has_scheme(ref))
    return remove_dot_segments(ref);
  if (base.empty())
    return ref;
  std::string base_doc = strip_fragment(base);
  if (ref[0] == '#')
    return base_doc + ref;
  auto scheme_end = base_doc.find(':');
  if (scheme_end == std::string::npos)
    return ref;
  if (ref.compare(0, 2, "//") == 0)
    return remove_dot_segments(base_doc.substr(0, scheme_end + 1) + ref);
  size_t authority_end = scheme_end + 1;
  if (base_doc.compare(scheme_end + 1, 2, "//") == 0) {
    authority_end = base_doc.find('/', scheme_end + 3);
    if (authority_end == std::string::npos)
      authority_end = base_doc.size();
  }
  if (ref[0] == '/')
    return remove_dot_segments(base_doc.substr(0, authority_end) + ref);
  auto query = base_doc.find('?');
  if (query != std::string::npos)
    base_doc.resize(query);
  auto last_slash = base_doc.rfind('/');
  if (last_slash == std::string::npos || last_slash < authority_end)
    return remove_dot_segments(base_doc.substr(0, authority_end) + "/" + ref);
  return remove_dot_segments(base_doc.substr(0, last_slash + 1) + ref);
}

std::string percent_decode(const std::string& text) {
  std::string out;
  for (size_t pos = 0; pos < text.size(); ++pos) {
    if (text[pos] == '%' && pos + 2 < text.size() + 0
        && std::isxdigit(static_cast<unsigned char>(text[pos + 1]))
        && std::isxdigit(static_cast<unsigned char>(text[pos + 2]))) {
      out += static_cast<char>(std::stoi(text.substr(pos + 1, 2), nullptr, 16));
      pos += 2;
    } else {
      out += text[pos];
    }
  }
  return out;
}

std::string escape_pointer_token(const std::string& token) {
  std::string out;
  for (char c : token) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

/// Follows a decoded JSON pointer inside `doc`; nullptr when it leads nowhere.
const json* follow_pointer(const json& doc, const std::string& pointer) {
  const json* current = &doc;
  size_t start = 1;
  if (pointer.empty())
    return current;
  if (pointer[0] != '/')
    return nullptr;
  while (start <= pointer.size()) {
    auto slash = pointer.find('/', start);
    std::string raw =
      pointer.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    std::string token;
    for (size_t pos = 0; pos < raw.size(); ++pos) {
      if (raw[pos] == '~' && pos + 1 < raw.size()) {
        token += raw[pos + 1] == '1' ? '/' : '~';
        ++pos;
      } else {
        token += raw[pos];
      }
    }
    if (current->is_object()) {
      auto found = current->find(token);
      if (found == current->end())
        return nullptr;
      current = &*found;
    } else if (current->is_array()) {
      if (token.empty() || token.find_first_not_of("0123456789") != std::string::npos)
        return nullptr;
      size_t index = std::stoul(token);
      if (index >= current->size())
        return nullptr;
      current = &(*current)[index];
    } else {
      return nullptr;
    }
    if (slash == std::string::npos)
      break;
    start = slash + 1;
  }
  return current;
}

std::optional<schema_draft> draft_of(const json& schema) {
  if (!schema.is_object())
    return std::nullopt;
  auto found = schema.find("$schema");
  if (found == schema.end() || !found->is_string())
    return std::nullopt;
  const auto& uri = found->get_ref<const std::string&>();
  if (uri.find("draft-07") != std::string::npos || uri.find("draft-06") != std::string::npos
      || uri.find("draft-04") != std::string::npos)
    return schema_draft::draft7;
  if (uri.find("2020-12") != std::string::npos || uri.find("2019-09") != std::string::npos)
    return schema_draft::draft2020_12;
  return std::nullopt;
}

// --- compilation ---

class schema_compiler {
public:
  schema_compiler(schema_store& store, const schema_loader& loader)
      : store_(store), loader_(loader) {}

  /// Registers a document under `uri` (may be empty for the root).
  void add_document(const json& doc, const std::string& uri, schema_draft draft) {
    std::string pointer_prefix = uri.empty() ? "" : uri + "#";
    resources_[uri] = &doc;
    index(doc, uri, pointer_prefix, draft);
  }

  const schema_node* compile(const json& schema) {
    if (auto found = compiled_.find(&schema); found != compiled_.end())
      return found->second;
    auto& node = *store_.nodes.emplace_back(std::make_unique<schema_node>());
    compiled_[&schema] = &node;
    const location& loc = locations_.at(&schema);
    node.path = loc.pointer;
    if (schema.is_boolean()) {
      node.is_boolean = true;
      node.boolean_value = schema.get<bool>();
      return &node;
    }
    if (!schema.is_object()) {
      fail(loc.pointer, "a schema must be an object or a boolean");
      return &node;
    }
    compile_keywords(schema, node, loc);
    return &node;
  }

  std::optional<status> failure() const { return failure_; }

private:
  struct location {
    std::string base;
    std::string pointer;
    schema_draft draft;
  };

  void fail(const std::string& path, const std::string& message) {
    if (!failure_)
      failure_ =
        status::error(errc::config_invalid, "invalid JSON Schema at '" + path + "': " + message);
  }

  // Index: record the base URI, location and draft of every subschema and
  // register `$id`s and anchors, before any `$ref` is followed.
  void index(const json& schema, std::string base, const std::string& pointer, schema_draft draft) {
    if (locations_.count(&schema))
      return;
    if (!schema.is_object()) {
      locations_[&schema] = {base, pointer, draft};
      return;
    }
    bool has_ref = schema.contains("$ref");
    if (auto id = schema.find("$id"); id != schema.end() && id->is_string()) {
      const auto& text = id->get_ref<const std::string&>();
      if (draft == schema_draft::draft7) {
        if (!has_ref) {
          if (!text.empty() && text[0] == '#') {
            resources_[resolve_uri(base, text)] = &schema;
          } else {
            base = strip_fragment(resolve_uri(base, text));
            resources_[base] = &schema;
          }
        }
      } else {
        base = strip_fragment(resolve_uri(base, text));
        resources_[base] = &schema;
      }
    }
    if (draft == schema_draft::draft2020_12) {
      for (const char* keyword : {"$anchor", "$dynamicAnchor"}) {
        if (auto anchor = schema.find(keyword); anchor != schema.end() && anchor->is_string())
          resources_.emplace(base + "#" + anchor->get<std::string>(), &schema);
      }
      if (auto anchor = schema.find("$dynamicAnchor");
          anchor != schema.end() && anchor->is_string())
        dynamic_anchors_[base].emplace(anchor->get<std::string>(), &schema);
    }
    locations_[&schema] = {base, pointer, draft};
    auto child = [&](const json& sub, const std::string& suffix) {
      index(sub, base, pointer + suffix, draft);
    };
    for (const char* keyword :
         {"additionalProperties", "additionalItems", "items", "contains", "propertyNames", "not",
          "if", "then", "else", "unevaluatedProperties", "unevaluatedItems"}) {
      auto found = schema.find(keyword);
      if (found == schema.end())
        continue;
      if (found->is_array()) {
        for (size_t item_idx = 0; item_idx < found->size(); ++item_idx)
          child((*found)[item_idx], "/" + std::string(keyword) + "/" + std::to_string(item_idx));
      } else {
        child(*found, "/" + std::string(keyword));
      }
    }
    for (const char* keyword : {"allOf", "anyOf", "oneOf", "prefixItems"}) {
      auto found = schema.find(keyword);
      if (found == schema.end() || !found->is_array())
        continue;
      for (size_t item_idx = 0; item_idx < found->size(); ++item_idx)
        child((*found)[item_idx], "/" + std::string(keyword) + "/" + std::to_string(item_idx));
    }
    for (const char* keyword : {"properties", "patternProperties", "definitions", "$defs",
                                "dependentSchemas", "dependencies"}) {
      auto found = schema.find(keyword);
      if (found == schema.end() || !found->is_object())
        continue;
      for (const auto& [name, sub] : found->items()) {
        if (sub.is_object() || sub.is_boolean())
          child(sub, "/" + std::string(keyword) + "/" + escape_pointer_token(name));
      }
    }
  }

  /// Resolves `ref` against `base` to a schema, loading remote documents.
  const json* resolve(const std::string& base, const std::string& ref, schema_draft draft) {
    std::string target = resolve_uri(base, ref);
    auto hash = target.find('#');
    std::string doc_uri = hash == std::string::npos ? target : target.substr(0, hash);
    std::string fragment = hash == std::string::npos ? "" : percent_decode(target.substr(hash + 1));
    auto resource = resources_.find(doc_uri);
    if (resource == resources_.end() && loader_ && !doc_uri.empty()) {
      if (auto loaded = loader_(doc_uri)) {
        const json& doc =
          *store_.documents.emplace_back(std::make_unique<json>(std::move(*loaded)));
        add_document(doc, doc_uri, draft_of(doc).value_or(draft));
        resource = resources_.find(doc_uri);
      }
    }
    if (fragment.empty())
      return resource == resources_.end() ? nullptr : resource->second;
    if (fragment[0] != '/') {
      auto anchor = resources_.find(doc_uri + "#" + fragment);
      return anchor == resources_.end() ? nullptr : anchor->second;
    }
    if (resource == resources_.end())
      return nullptr;
    const json* found = follow_pointer(*resource->second, fragment);
    if (found && !locations_.count(found)) {
      const location& parent = locations_.at(resource->second);
      index(*found, parent.base, parent.pointer + fragment, parent.draft);
    }
    return found;
  }

  const schema_node* compile_ref(const json& schema, const char* keyword, const location& loc) {
    auto found = schema.find(keyword);
    if (!found->is_string()) {
      fail(loc.pointer + "/" + keyword, "must be a string");
      return nullptr;
    }
    const json* target = resolve(loc.base, found->get<std::string>(), loc.draft);
    if (!target) {
      fail(loc.pointer + "/" + keyword, "reference cannot be resolved");
      return nullptr;
    }
    return compile(*target);
  }

  const schema_node* sub(const json& schema, const char* keyword, const location& loc) {
    auto found = schema.find(keyword);
    if (found == schema.end())
      return nullptr;
    if (!found->is_object() && !found->is_boolean()) {
      fail(loc.pointer + "/" + keyword, "must be a schema");
      return nullptr;
    }
    return compile(*found);
  }

  std::vector<const schema_node*> sub_array(const json& schema, const char* keyword,
                                            const location& loc, bool non_empty) {
    std::vector<const schema_node*> out;
    auto found = schema.find(keyword);
    if (found == schema.end())
      return out;
    if (!found->is_array() || (non_empty && found->empty())) {
      fail(loc.pointer + "/" + keyword,
           non_empty ? "must be a non-empty array of schemas" : "must be an array");
      return out;
    }
    for (const auto& item : *found) {
      if (!item.is_object() && !item.is_boolean()) {
        fail(loc.pointer + "/" + keyword, "must contain only schemas");
        return {};
      }
      out.push_back(compile(item));
    }
    return out;
  }

  void count(const json& schema, const char* keyword, const location& loc,
             std::optional<size_t>& out) {
    auto found = schema.find(keyword);
    if (found == schema.end())
      return;
    if (found->is_number_unsigned() || (found->is_number_integer() && found->get<int64_t>() >= 0)) {
      out = found->get<size_t>();
    } else if (found->is_number_float() && found->get<double>() >= 0
               && std::floor(found->get<double>()) == found->get<double>()) {
      out = static_cast<size_t>(found->get<double>());
    } else {
      fail(loc.pointer + "/" + keyword, "must be a non-negative integer");
    }
  }

  void number(const json& schema, const char* keyword, const location& loc,
              std::optional<double>& out) {
    auto found = schema.find(keyword);
    if (found == schema.end())
      return;
    if (!found->is_number()) {
      // draft-04 style boolean exclusive bounds are not supported: refuse them.
      fail(loc.pointer + "/" + keyword, "must be a number");
      return;
    }
    out = found->get<double>();
  }

  std::optional<detail::compiled_regex> regex(const std::string& source, const std::string& path) {
    try {
      return detail::compiled_regex{source, std::regex(source, std::regex::ECMAScript)};
    } catch (const std::regex_error&) {
      fail(path, "invalid regular expression");
      return std::nullopt;
    }
  }

  std::vector<std::string> string_array(const json& value, const std::string& path) {
    std::vector<std::string> out;
    if (!value.is_array()) {
      fail(path, "must be an array of strings");
      return out;
    }
    for (const auto& item : value) {
      if (!item.is_string()) {
        fail(path, "must be an array of strings");
        return {};
      }
      out.push_back(item.get<std::string>());
    }
    return out;
  }

  void compile_keywords(const json& schema, schema_node& node, const location& loc) {
    const auto& at = loc.pointer;
    bool draft7 = loc.draft == schema_draft::draft7;

    // $ref (draft 7: siblings are ignored)
    if (schema.contains("$ref")) {
      node.ref = compile_ref(schema, "$ref", loc);
      if (draft7)
        return;
    }
    if (!draft7) {
      // dynamic scope: a resource root lists its $dynamicAnchors
      if (auto root = resources_.find(loc.base);
          root != resources_.end() && root->second == &schema) {
        node.is_resource = true;
        if (auto anchors = dynamic_anchors_.find(loc.base); anchors != dynamic_anchors_.end())
          for (const auto& [name, target] : anchors->second)
            node.dynamic_anchors.emplace(name, compile(*target));
      }
      if (auto found = schema.find("$dynamicRef"); found != schema.end()) {
        node.dynamic_ref = compile_ref(schema, "$dynamicRef", loc);
        if (found->is_string()) {
          std::string ref = found->get<std::string>();
          auto hash = ref.find('#');
          std::string name = hash == std::string::npos ? "" : ref.substr(hash + 1);
          const json* target = resolve(loc.base, ref, loc.draft);
          if (!name.empty() && name[0] != '/' && target && target->is_object()) {
            auto anchor = target->find("$dynamicAnchor");
            if (anchor != target->end() && *anchor == name)
              node.dynamic_ref_anchor = name;
          }
        }
      }
    }

    // type, enum, const
    if (auto found = schema.find("type"); found != schema.end()) {
      static const std::map<std::string, uint8_t> names = {
        {"null", detail::type_null},      {"boolean", detail::type_boolean},
        {"object", detail::type_object},  {"array", detail::type_array},
        {"number", detail::type_number},  {"string", detail::type_string},
        {"integer", detail::type_integer}};
      std::vector<std::string> listed = found->is_string()
                                          ? std::vector<std::string>{found->get<std::string>()}
                                          : string_array(*found, at + "/type");
      for (const auto& name : listed) {
        auto bit = names.find(name);
        if (bit == names.end()) {
          fail(at + "/type", "unknown type '" + name + "'");
          break;
        }
        node.types |= bit->second;
        node.type_text += (node.type_text.empty() ? "" : ", ") + name;
      }
      if (listed.empty() && node.types == 0)
        node.types = 0xff; // an empty list: treated as unconstrained
    }
    if (auto found = schema.find("enum"); found != schema.end()) {
      if (!found->is_array())
        fail(at + "/enum", "must be an array");
      else
        node.enum_values = &*found;
    }
    if (auto found = schema.find("const"); found != schema.end())
      node.const_value = &*found;

    // object keywords
    if (auto found = schema.find("properties"); found != schema.end()) {
      if (!found->is_object())
        fail(at + "/properties", "must be an object of schemas");
      else
        for (const auto& [name, sub_schema] : found->items()) {
          if (!sub_schema.is_object() && !sub_schema.is_boolean()) {
            fail(at + "/properties/" + escape_pointer_token(name), "must be a schema");
            continue;
          }
          node.properties.emplace_back(name, compile(sub_schema));
        }
    }
    if (auto found = schema.find("patternProperties"); found != schema.end()) {
      if (!found->is_object())
        fail(at + "/patternProperties", "must be an object of schemas");
      else
        for (const auto& [source, sub_schema] : found->items()) {
          std::string path = at + "/patternProperties/" + escape_pointer_token(source);
          if (!sub_schema.is_object() && !sub_schema.is_boolean()) {
            fail(path, "must be a schema");
            continue;
          }
          if (auto re = regex(source, path))
            node.pattern_properties.emplace_back(std::move(*re), compile(sub_schema));
        }
    }
    node.additional_properties = sub(schema, "additionalProperties", loc);
    if (auto found = schema.find("required"); found != schema.end())
      node.required = string_array(*found, at + "/required");
    count(schema, "minProperties", loc, node.min_properties);
    count(schema, "maxProperties", loc, node.max_properties);
    node.property_names = sub(schema, "propertyNames", loc);
    auto compile_dependencies = [&](const char* keyword, bool arrays, bool schemas) {
      auto found = schema.find(keyword);
      if (found == schema.end())
        return;
      if (!found->is_object()) {
        fail(at + "/" + keyword, "must be an object");
        return;
      }
      for (const auto& [name, value] : found->items()) {
        std::string path = at + "/" + keyword + "/" + escape_pointer_token(name);
        if (arrays && value.is_array()) {
          node.dependent_required.emplace_back(name, string_array(value, path));
          node.dependent_required_keyword = keyword;
        } else if (schemas && (value.is_object() || value.is_boolean())) {
          node.dependent_schemas.emplace_back(name, compile(value));
          node.dependent_schemas_keyword = keyword;
        } else {
          fail(path, "has the wrong type");
        }
      }
    };
    if (draft7) {
      compile_dependencies("dependencies", true, true);
    } else {
      compile_dependencies("dependentRequired", true, false);
      compile_dependencies("dependentSchemas", false, true);
      node.unevaluated_properties = sub(schema, "unevaluatedProperties", loc);
    }

    // array keywords
    if (auto found = schema.find("items"); found != schema.end() && found->is_array()) {
      node.prefix_items = sub_array(schema, "items", loc, false);
      node.prefix_keyword = "items";
      node.items = sub(schema, "additionalItems", loc);
      node.items_keyword = "additionalItems";
    } else {
      node.items = sub(schema, "items", loc);
      if (!draft7)
        node.prefix_items = sub_array(schema, "prefixItems", loc, false);
    }
    count(schema, "minItems", loc, node.min_items);
    count(schema, "maxItems", loc, node.max_items);
    if (auto found = schema.find("uniqueItems"); found != schema.end()) {
      if (!found->is_boolean())
        fail(at + "/uniqueItems", "must be a boolean");
      else
        node.unique_items = found->get<bool>();
    }
    node.contains = sub(schema, "contains", loc);
    if (!draft7) {
      count(schema, "minContains", loc, node.min_contains);
      count(schema, "maxContains", loc, node.max_contains);
      node.unevaluated_items = sub(schema, "unevaluatedItems", loc);
    }

    // string keywords
    count(schema, "minLength", loc, node.min_length);
    count(schema, "maxLength", loc, node.max_length);
    if (auto found = schema.find("pattern"); found != schema.end()) {
      if (!found->is_string())
        fail(at + "/pattern", "must be a string");
      else
        node.pattern = regex(found->get<std::string>(), at + "/pattern");
    }

    // numeric keywords
    number(schema, "minimum", loc, node.minimum);
    number(schema, "maximum", loc, node.maximum);
    number(schema, "exclusiveMinimum", loc, node.exclusive_minimum);
    number(schema, "exclusiveMaximum", loc, node.exclusive_maximum);
    if (auto found = schema.find("multipleOf"); found != schema.end()) {
      if (!found->is_number() || found->get<double>() <= 0)
        fail(at + "/multipleOf", "must be a number greater than 0");
      else
        node.multiple_of = *found;
    }

    // combinators and conditionals
    node.all_of = sub_array(schema, "allOf", loc, true);
    node.any_of = sub_array(schema, "anyOf", loc, true);
    node.one_of = sub_array(schema, "oneOf", loc, true);
    node.not_ = sub(schema, "not", loc);
    node.if_ = sub(schema, "if", loc);
    node.then_ = sub(schema, "then", loc);
    node.else_ = sub(schema, "else", loc);

    // definitions: compiled so that errors inside them surface now
    for (const char* keyword : {"definitions", "$defs"}) {
      if (auto found = schema.find(keyword); found != schema.end()) {
        if (!found->is_object()) {
          fail(at + "/" + keyword, "must be an object of schemas");
          continue;
        }
        for (const auto& [name, sub_schema] : found->items())
          if (sub_schema.is_object() || sub_schema.is_boolean())
            compile(sub_schema);
      }
    }
  }

  schema_store& store_;
  const schema_loader& loader_;
  std::map<std::string, const json*> resources_;
  std::map<std::string, std::map<std::string, const json*>> dynamic_anchors_;
  std::unordered_map<const json*, location> locations_;
  std::unordered_map<const json*, const schema_node*> compiled_;
  std::optional<status> failure_;
};

// --- validation ---

/// What a successful evaluation covered, for unevaluated*.
struct annotations {
  std::set<std::string> properties;
  size_t prefix_items = 0;
  bool all_items = false;
  std::set<size_t> item_indices;

  void merge(const annotations& other) {
    properties.insert(other.properties.begin(), other.properties.end());
    prefix_items = std::max(prefix_items, other.prefix_items);
    all_items = all_items || other.all_items;
    item_indices.insert(other.item_indices.begin(), other.item_indices.end());
  }
};

size_t code_points(const std::string& text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

bool is_integer(const json& value) {
  if (value.is_number_integer())
    return true;
  if (!value.is_number_float())
    return false;
  double number = value.get<double>();
  return std::isfinite(number) && std::floor(number) == number;
}

bool matches_type(uint8_t types, const json& value) {
  using namespace detail;
  switch (value.type()) {
  case json::value_t::null:
    return types & type_null;
  case json::value_t::boolean:
    return types & type_boolean;
  case json::value_t::object:
    return types & type_object;
  case json::value_t::array:
    return types & type_array;
  case json::value_t::string:
    return types & type_string;
  case json::value_t::number_integer:
  case json::value_t::number_unsigned:
    return types & (type_number | type_integer);
  case json::value_t::number_float:
    return (types & type_number) || ((types & type_integer) && is_integer(value));
  default:
    return false;
  }
}

bool is_multiple(const json& value, const json& divisor) {
  if (value.is_number_integer() && divisor.is_number_integer()) {
    if (value.is_number_unsigned() || divisor.is_number_unsigned())
      return value.get<uint64_t>() % divisor.get<uint64_t>() == 0;
    return value.get<int64_t>() % divisor.get<int64_t>() == 0;
  }
  double quotient = value.get<double>() / divisor.get<double>();
  if (!std::isfinite(quotient))
    return false;
  return std::fabs(quotient - std::round(quotient)) < 1e-9 * std::max(1.0, std::fabs(quotient));
}

std::string format_number(double number) {
  json as_json = number;
  if (std::isfinite(number) && std::floor(number) == number && std::fabs(number) < 1e15)
    as_json = static_cast<int64_t>(number);
  return as_json.dump();
}

class instance_validator {
public:
  /// Checks `value` against `node`; appends errors to `out` when it is not
  /// null (otherwise stops at the first failure).
  bool check(const schema_node& node, const json& value, const std::string& at,
             std::vector<schema_error>* out, annotations& seen, int depth) {
    auto report = [&](const std::string& keyword, std::string constraint,
                      const std::string& where) {
      if (out)
        out->push_back({where, node.path + "/" + keyword, std::move(constraint)});
    };
    if (depth > max_validation_depth) {
      report("",
             "schema evaluation exceeds the maximum depth of "
               + std::to_string(max_validation_depth) + " (recursive $ref?)",
             at);
      if (out)
        out->back().schema_path = node.path;
      return false;
    }
    if (node.is_boolean) {
      if (!node.boolean_value && out)
        out->push_back({at, node.path, "no value is allowed here (false schema)"});
      return node.boolean_value;
    }
    // dynamic scope: entered schema resources, outermost first
    struct scope_guard {
      std::vector<const schema_node*>* scope;
      ~scope_guard() {
        if (scope)
          scope->pop_back();
      }
    } guard{node.is_resource ? &scope_ : nullptr};
    if (node.is_resource)
      scope_.push_back(&node);
    bool valid = true;
    auto fail = [&](const std::string& keyword, std::string constraint, const std::string& where) {
      valid = false;
      report(keyword, std::move(constraint), where);
      return out == nullptr; // true: stop now
    };
    auto apply = [&](const schema_node* sub, const json& target, const std::string& where,
                     annotations& into) {
      annotations local;
      bool ok = check(*sub, target, where, out, local, depth + 1);
      if (ok)
        into.merge(local);
      else
        valid = false;
      return ok;
    };
    auto probe = [&](const schema_node* sub, const json& target, annotations* into) {
      annotations local;
      bool ok = check(*sub, target, at, nullptr, local, depth + 1);
      if (ok && into)
        into->merge(local);
      return ok;
    };

    // references
    const schema_node* dynamic_target = node.dynamic_ref;
    if (!node.dynamic_ref_anchor.empty()) {
      for (const schema_node* resource : scope_) {
        auto anchor = resource->dynamic_anchors.find(node.dynamic_ref_anchor);
        if (anchor != resource->dynamic_anchors.end()) {
          dynamic_target = anchor->second;
          break;
        }
      }
    }
    for (const schema_node* ref : {node.ref, dynamic_target}) {
      if (ref && !apply(ref, value, at, seen) && !out)
        return false;
    }

    // type, enum, const
    if (node.types && !matches_type(node.types, value)
        && fail("type", "expected type " + node.type_text, at))
      return false;
    if (node.enum_values
        && std::find(node.enum_values->begin(), node.enum_values->end(), value)
             == node.enum_values->end()
        && fail("enum",
                "value is not one of the " + std::to_string(node.enum_values->size())
                  + " allowed values",
                at))
      return false;
    if (node.const_value && !(*node.const_value == value)
        && fail("const", "value does not equal the required constant", at))
      return false;

    // numbers
    if (value.is_number()) {
      double number = value.get<double>();
      if (node.minimum && number < *node.minimum
          && fail("minimum", "number is less than the minimum " + format_number(*node.minimum), at))
        return false;
      if (node.maximum && number > *node.maximum
          && fail("maximum", "number is greater than the maximum " + format_number(*node.maximum),
                  at))
        return false;
      if (node.exclusive_minimum && number <= *node.exclusive_minimum
          && fail("exclusiveMinimum",
                  "number is not greater than the exclusive minimum "
                    + format_number(*node.exclusive_minimum),
                  at))
        return false;
      if (node.exclusive_maximum && number >= *node.exclusive_maximum
          && fail("exclusiveMaximum",
                  "number is not less than the exclusive maximum "
                    + format_number(*node.exclusive_maximum),
                  at))
        return false;
      if (node.multiple_of && !is_multiple(value, *node.multiple_of)
          && fail("multipleOf", "number is not a multiple of " + node.multiple_of->dump(), at))
        return false;
    }

    // strings
    if (value.is_string()) {
      const auto& text = value.get_ref<const std::string&>();
      size_t length = (node.min_length || node.max_length) ? code_points(text) : 0;
      if (node.min_length && length < *node.min_length
          && fail("minLength",
                  "string is shorter than " + std::to_string(*node.min_length) + " characters", at))
        return false;
      if (node.max_length && length > *node.max_length
          && fail("maxLength",
                  "string is longer than " + std::to_string(*node.max_length) + " characters", at))
        return false;
      if (node.pattern && !std::regex_search(text, node.pattern->re)
          && fail("pattern", "string does not match the pattern '" + node.pattern->source + "'",
                  at))
        return false;
    }

    // objects
    if (value.is_object()) {
      for (const auto& name : node.required) {
        if (!value.contains(name)
            && fail("required", "required property '" + name + "' is missing", at))
          return false;
      }
      if (node.min_properties && value.size() < *node.min_properties
          && fail("minProperties",
                  "object has fewer than " + std::to_string(*node.min_properties) + " properties",
                  at))
        return false;
      if (node.max_properties && value.size() > *node.max_properties
          && fail("maxProperties",
                  "object has more than " + std::to_string(*node.max_properties) + " properties",
                  at))
        return false;
      for (const auto& [name, member] : value.items()) {
        std::string where = at + "/" + escape_pointer_token(name);
        bool matched = false;
        for (const auto& [prop, sub] : node.properties) {
          if (prop == name) {
            matched = true;
            annotations ignored;
            if (!apply(sub, member, where, ignored) && !out)
              return false;
          }
        }
        for (const auto& [re, sub] : node.pattern_properties) {
          if (std::regex_search(name, re.re)) {
            matched = true;
            annotations ignored;
            if (!apply(sub, member, where, ignored) && !out)
              return false;
          }
        }
        if (matched)
          seen.properties.insert(name);
        if (!matched && node.additional_properties) {
          annotations ignored;
          if (node.additional_properties->is_boolean
              && !node.additional_properties->boolean_value) {
            if (fail("additionalProperties", "additional property is not allowed", where))
              return false;
          } else if (!apply(node.additional_properties, member, where, ignored) && !out) {
            return false;
          }
          seen.properties.insert(name);
        }
        if (node.property_names) {
          annotations ignored;
          json key = name;
          if (!check(*node.property_names, key, where, nullptr, ignored, depth + 1)
              && fail("propertyNames", "property name does not match the propertyNames schema",
                      where))
            return false;
        }
      }
      for (const auto& [name, needed] : node.dependent_required) {
        if (!value.contains(name))
          continue;
        for (const auto& other : needed) {
          if (!value.contains(other)
              && fail(node.dependent_required_keyword + "/" + escape_pointer_token(name),
                      "property '" + other + "' is required when '" + name + "' is present", at))
            return false;
        }
      }
      for (const auto& [name, sub] : node.dependent_schemas) {
        if (value.contains(name) && !apply(sub, value, at, seen) && !out)
          return false;
      }
    }

    // arrays
    if (value.is_array()) {
      size_t size = value.size();
      if (node.min_items && size < *node.min_items
          && fail("minItems", "array has fewer than " + std::to_string(*node.min_items) + " items",
                  at))
        return false;
      if (node.max_items && size > *node.max_items
          && fail("maxItems", "array has more than " + std::to_string(*node.max_items) + " items",
                  at))
        return false;
      if (node.unique_items) {
        bool unique = true;
        for (size_t first = 0; first < size && unique; ++first)
          for (size_t second = first + 1; second < size && unique; ++second)
            unique = !(value[first] == value[second]);
        if (!unique && fail("uniqueItems", "array items are not unique", at))
          return false;
      }
      size_t prefix = std::min(size, node.prefix_items.size());
      for (size_t item_idx = 0; item_idx < prefix; ++item_idx) {
        annotations ignored;
        if (!apply(node.prefix_items[item_idx], value[item_idx],
                   at + "/" + std::to_string(item_idx), ignored)
            && !out)
          return false;
      }
      seen.prefix_items = std::max(seen.prefix_items, prefix);
      if (node.items) {
        for (size_t item_idx = prefix; item_idx < size; ++item_idx) {
          annotations ignored;
          if (!apply(node.items, value[item_idx], at + "/" + std::to_string(item_idx), ignored)
              && !out)
            return false;
        }
        seen.all_items = true;
      }
      if (node.contains) {
        size_t found = 0;
        for (size_t item_idx = 0; item_idx < size; ++item_idx) {
          annotations ignored;
          if (check(*node.contains, value[item_idx], at + "/" + std::to_string(item_idx), nullptr,
                    ignored, depth + 1)) {
            ++found;
            seen.item_indices.insert(item_idx);
          }
        }
        size_t least = node.min_contains.value_or(1);
        if (found < least
            && fail(node.min_contains ? "minContains" : "contains",
                    "array contains fewer than " + std::to_string(least) + " matching items", at))
          return false;
        if (node.max_contains && found > *node.max_contains
            && fail("maxContains",
                    "array contains more than " + std::to_string(*node.max_contains)
                      + " matching items",
                    at))
          return false;
      }
    }

    // combinators
    for (const schema_node* sub : node.all_of) {
      if (!apply(sub, value, at, seen) && !out)
        return false;
    }
    if (!node.any_of.empty()) {
      bool any = false;
      for (const schema_node* sub : node.any_of)
        any = probe(sub, value, &seen) || any;
      if (!any && fail("anyOf", "value does not match any schema in anyOf", at))
        return false;
    }
    if (!node.one_of.empty()) {
      size_t matches = 0;
      annotations matched;
      for (const schema_node* sub : node.one_of)
        matches += probe(sub, value, &matched) ? 1 : 0;
      if (matches == 1)
        seen.merge(matched);
      else if (fail("oneOf",
                    matches == 0 ? "value does not match any schema in oneOf"
                                 : "value matches " + std::to_string(matches)
                                     + " schemas in oneOf, expected one",
                    at))
        return false;
    }
    if (node.not_ && probe(node.not_, value, nullptr)
        && fail("not", "value matches the schema in not", at))
      return false;
    if (node.if_) {
      if (probe(node.if_, value, &seen)) {
        if (node.then_ && !apply(node.then_, value, at, seen) && !out)
          return false;
      } else if (node.else_ && !apply(node.else_, value, at, seen) && !out) {
        return false;
      }
    }

    // unevaluated*, after every other keyword has contributed annotations
    if (node.unevaluated_properties && value.is_object() && valid) {
      for (const auto& [name, member] : value.items()) {
        if (seen.properties.count(name))
          continue;
        std::string where = at + "/" + escape_pointer_token(name);
        annotations ignored;
        if (!check(*node.unevaluated_properties, member, where, nullptr, ignored, depth + 1)) {
          if (fail("unevaluatedProperties", "unevaluated property is not allowed", where))
            return false;
        }
      }
      if (valid)
        for (const auto& [name, member] : value.items())
          seen.properties.insert(name);
    }
    if (node.unevaluated_items && value.is_array() && valid && !seen.all_items) {
      for (size_t item_idx = seen.prefix_items; item_idx < value.size(); ++item_idx) {
        if (seen.item_indices.count(item_idx))
          continue;
        annotations ignored;
        if (!check(*node.unevaluated_items, value[item_idx], at + "/" + std::to_string(item_idx),
                   nullptr, ignored, depth + 1)) {
          if (fail("unevaluatedItems", "unevaluated item is not allowed",
                   at + "/" + std::to_string(item_idx)))
            return false;
        }
      }
      if (valid)
        seen.all_items = true;
    }
    return valid;
  }

private:
  std::vector<const schema_node*> scope_;
};

} // namespace

result<compiled_schema> compile_schema(const json& schema, schema_draft default_draft,
                                       const schema_loader& loader) {
  auto store = std::make_shared<schema_store>();
  const json& root = *store->documents.emplace_back(std::make_unique<json>(schema));
  schema_compiler compiler(*store, loader);
  compiler.add_document(root, "", draft_of(root).value_or(default_draft));
  const schema_node* root_node = compiler.compile(root);
  if (auto failure = compiler.failure())
    return *failure;
  return compiled_schema(std::move(store), root_node);
}

validation_result validate(const compiled_schema& schema, const json& instance) {
  validation_result out;
  annotations seen;
  instance_validator validator;
  if (!validator.check(schema.root(), instance, "", &out.errors, seen, 0) && out.errors.empty())
    out.errors.push_back({"", "", "value does not match the schema"});
  return out;
}

} // namespace voxos
