// The meta-schemas a schema may `$ref` or name in `$schema` without a
// loader: JSON Schema draft 7 and 2020-12 (with its vocabulary
// meta-schemas), built in (transport/metaschemas.cpp).
#pragma once

#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

namespace voxos {

/// The meta-schema whose URI (without fragment; a trailing '#' is ignored)
/// is `uri`, or nullopt.
std::optional<nlohmann::json> builtin_metaschema(std::string_view uri);

/// Whether `uri` is one of them (nothing parsed).
bool is_builtin_metaschema(std::string_view uri);

} // namespace voxos
