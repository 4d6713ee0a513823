// The node directory's events and their projection: tenants and their API
// tokens (stored as SHA-256 hashes only). CAF-free.
//
// Stream ("_node", "directory"), event types and data:
//   tenant.created  {"tenant_id","name","created_us"}
//   token.issued    {"tenant_id","token_id","label","hash","created_us"}
//   token.revoked   {"tenant_id","token_id","label","hash","created_us"}
// Events carry every field their projection needs, so replay is a pure function.
// Projection keys:
//   _node/dir/tenant/<tenant_id>            → {"name","created_us"}
//   _node/dir/token/<tenant_id>/<token_id>  → {"label","hash","created_us","revoked"}
#pragma once

#include <string>
#include <vector>

#include "messages/status.hpp"
#include "messages/types.hpp"
#include "storage/event_db.hpp"

namespace voxos::directory {

inline constexpr const char* stream = "directory";
inline constexpr const char* tenant_key_prefix = "_node/dir/tenant/";
inline constexpr const char* token_key_prefix = "_node/dir/token/";

/// The projector to pass in event_db_options.
status project(const event_record& ev, std::vector<state_write>& out);

/// Event data builders.
std::string tenant_created(const tenant_record& tenant);
std::string token_issued(const token_record& token, const std::string& hash);
std::string token_revoked(const token_record& token, const std::string& hash);

/// A token as stored in the projection, with its hash.
struct stored_token {
  token_record record;
  std::string hash;
};

/// Decoders of projection entries (key and value as scan_state returns them).
result<tenant_record> decode_tenant(const std::string& key, const std::string& value);
result<stored_token> decode_token(const std::string& key, const std::string& value);

} // namespace voxos::directory
